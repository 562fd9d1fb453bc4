"""Fixtures of the reliability suite, and the plugin that writes ``tests/reliability/RESULTS.md``.

RESULTS.md is generated from the suite's own results: every test under this folder is recorded with its scenario
(the first line of its module's docstring), what was tried (the first line of its own docstring, plus the
parameter id) and its outcome; the table is written when the session ends. A strict ``xfail`` is a known product
bug (its reason is shown); a failure is shown as FAILED. The README's Reliability section includes this file.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
RESULTS_FILE = HERE / "RESULTS.md"


# ---------------------------------------------------------------- results plugin
@dataclass
class _Case:
    param: str | None
    outcome: str = "not run"
    detail: str = ""


@dataclass
class _Row:
    """One test function: parametrized cases are folded into one row of the table."""

    order: int
    scenario: str
    tried: str
    cases: dict[str, _Case] = field(default_factory=dict)


_ROWS: dict[tuple[str, str], _Row] = {}
_CASES: dict[str, _Case] = {}


def _first_paragraph(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def _is_ours(item: pytest.Item) -> bool:
    try:
        return Path(str(item.fspath)).resolve().is_relative_to(HERE)
    except (OSError, ValueError):
        return False


def _case(item: pytest.Item) -> _Case:
    case = _CASES.get(item.nodeid)
    if case is not None:
        return case
    module = getattr(item, "module", None)
    function = getattr(item, "function", None)
    key = (getattr(module, "__name__", ""), getattr(item, "originalname", item.name))
    row = _ROWS.get(key)
    if row is None:
        tried = _first_paragraph(getattr(function, "__doc__", None)) or item.name
        row = _ROWS[key] = _Row(len(_ROWS), _scenario(module), tried)
    callspec = getattr(item, "callspec", None)
    case = row.cases[item.nodeid] = _CASES[item.nodeid] = _Case(callspec.id if callspec is not None else None)
    return case


def _scenario(module: Any) -> str:
    """The first line of the module docstring, e.g. ``3. Concurrent writers: ...``."""
    doc = (getattr(module, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else getattr(module, "__name__", "?")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not _is_ours(item):
        return
    case = _case(item)
    wasxfail = getattr(report, "wasxfail", None)
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if wasxfail is not None and report.skipped:
            case.outcome, case.detail = "known bug (xfail)", str(wasxfail)
        elif wasxfail is not None and report.passed:
            case.outcome, case.detail = "XPASS (bug fixed? remove the xfail)", str(wasxfail)
        elif report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            case.outcome, case.detail = "skipped", str(reason).removeprefix("Skipped: ")
        elif report.passed:
            case.outcome = "survived"
        elif str(report.longrepr).startswith("[XPASS(strict)]"):
            case.outcome = "XPASS(strict): fixed? remove the xfail"
            case.detail = str(report.longrepr).removeprefix("[XPASS(strict)]").strip()
        else:
            case.outcome = "FAILED" if report.when == "call" else "ERROR (setup)"
            crash = getattr(report.longrepr, "reprcrash", None)
            case.detail = _first_paragraph(crash.message if crash is not None else str(report.longrepr))[:300]
    elif report.when == "teardown" and report.failed:
        case.outcome = "ERROR (teardown)"


def _modules(session: pytest.Session) -> list[Any]:
    seen: dict[str, Any] = {}
    for item in session.items:
        module = getattr(item, "module", None)
        if module is not None and _is_ours(item):
            seen.setdefault(module.__name__, module)
    return list(seen.values())


def pytest_collection_finish(session: pytest.Session) -> None:
    """Modules whose scenarios mostly wait (boots, restarts, retry budgets) start them now, in the background."""
    if session.config.option.collectonly:
        return
    for module in _modules(session):
        launch = getattr(module, "launch_in_background", None)
        if launch is not None:
            launch()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _result(row: _Row) -> str:
    cases = list(row.cases.values())
    outcomes = {c.outcome for c in cases}
    if len(outcomes) == 1:
        (outcome,) = outcomes
        text = outcome if len(cases) == 1 else f"{outcome} ({len(cases)}/{len(cases)})"
        details = sorted({c.detail for c in cases if c.detail})
        return text + (": " + "; ".join(details) if details else "")
    parts = []
    for outcome in sorted(outcomes):
        which = [c for c in cases if c.outcome == outcome]
        parts.append(f"{outcome} {len(which)}/{len(cases)}" + (
            "" if outcome == "survived" else ": " + ", ".join(f"[{c.param}]" + (f" {c.detail}" if c.detail else "")
                                                              for c in which)))
    return "; ".join(parts)


def _sort_key(row: _Row) -> tuple[int, int]:
    head = row.scenario.split(".", 1)[0]
    return (int(head) if head.isdigit() else 99, row.order)


def _ran_whole_suite(session: pytest.Session) -> bool:
    ran = {Path(str(item.fspath)).resolve() for item in session.items if _is_ours(item)}
    every = {p.resolve() for p in HERE.glob("test_*.py")}
    options = session.config.option
    return ran >= every and not getattr(options, "keyword", "") and not getattr(options, "markexpr", "")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for module in _modules(session):
        stop = getattr(module, "stop_background", None)
        if stop is not None:
            stop()
    if not _ROWS or os.environ.get("HSH_NO_RESULTS_MD") or not _ran_whole_suite(session):
        return  # a partial run (one module, -k, -m) must not replace the table of the whole suite
    counts: dict[str, int] = {}
    for case in _CASES.values():
        counts[case.outcome] = counts.get(case.outcome, 0) + 1
    summary = ", ".join(f"{k}: {n}" for k, n in sorted(counts.items()))
    lines = [
        "# Reliability suite: what was tried, and what survived",
        "",
        f"Generated by `tests/reliability/conftest.py` from the run of {datetime.date.today().isoformat()} "
        f"({len(_CASES)} cases; {summary}). Regenerate with `pytest tests/reliability`. A known bug is a strict "
        "`xfail` whose reason names the code at fault.",
        "",
        "| Scenario | What was tried | Result |",
        "|---|---|---|",
    ]
    previous = None
    for row in sorted(_ROWS.values(), key=_sort_key):
        params = [c.param for c in row.cases.values() if c.param is not None]
        tried = row.tried + (" Cases: " + ", ".join(f"`{p}`" for p in params) + "." if params else "")
        scenario = "" if row.scenario == previous else f"**{_cell(row.scenario)}**"
        previous = row.scenario
        lines.append(f"| {scenario} | {_cell(tried)} | {_cell(_result(row))} |")
    RESULTS_FILE.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- a metastore this test may kill
class KillableMetastore:
    """A private embedded metastore (own Derby folder, own port) that a test kills by PID and restarts."""

    def __init__(self, home: Path) -> None:
        from metastore.local import LocalMetastore

        self.service = LocalMetastore(home)
        self.info: Any = None

    def start(self, port: int | None = None) -> Any:
        self.info = self.service.start(port=port)
        return self.info

    def restart(self) -> Any:
        """Start again on the same port; the Derby state folder is reused, so everything committed is back."""
        return self.start(port=self.port)

    @property
    def uri(self) -> str:
        return str(self.info.uri)

    @property
    def port(self) -> int:
        return int(self.info.port)

    @property
    def pid(self) -> int:
        return int(self.info.pid)

    def kill(self) -> None:
        """SIGKILL the metastore JVM (the PID ``start`` recorded) and reap it: no shutdown hook runs."""
        pid = self.pid
        os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)

    def stop(self) -> None:
        self.service.stop()
