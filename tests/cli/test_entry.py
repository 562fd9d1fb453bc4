"""The ``hsh`` executable's exit: main's status, its output flushed, a traceback for an unexpected error.

``entry`` ends the process with ``os._exit`` to skip a teardown in which pyarrow can abort a finished command (see
its docstring), so what the normal exit would do for free -- flush buffered output, turn an exception into status
1 -- it must do itself. Each case runs in a child process whose stdout is a pipe (block-buffered).
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(body: str) -> subprocess.CompletedProcess[str]:
    program = f"import storage_handler.cli.main as m\n{body}\nm.entry()\n"
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("status", [0, 2, 7])
def test_the_status_is_mains_and_buffered_output_is_not_lost(status: int) -> None:
    proc = _run(f"m.main = lambda: (print('x' * 100, end=''), print('said', file=__import__('sys').stderr), "
                f"{status})[-1]")
    assert (proc.returncode, proc.stdout, proc.stderr.strip()) == (status, "x" * 100, "said")


def test_an_unexpected_error_prints_its_traceback_and_exits_1() -> None:
    proc = _run("def boom():\n    raise RuntimeError('the cause')\nm.main = boom")
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "RuntimeError: the cause" in proc.stderr


def test_usage_errors_and_help_keep_argparse_statuses() -> None:
    usage = subprocess.run([sys.executable, "-m", "storage_handler.cli.main", "--no-such-flag"],
                           capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "error:" in usage.stderr
    shown = subprocess.run([sys.executable, "-m", "storage_handler.cli.main", "--help"],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "usage:" in shown.stdout
