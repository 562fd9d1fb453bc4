"""Console output helpers: the footer progress bar shows files/s and time left on a terminal, nothing elsewhere."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from storage_handler.cli import output


def test_footer_progress_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(output, "err", Console(file=buffer, force_terminal=True, width=120))
    with output.footer_progress() as update:
        assert update is not None
        for done in (100, 200, 300):
            update(done, 300)
    text = buffer.getvalue()
    assert "reading Parquet footers" in text and "files/s" in text and "300/300" in text


def test_footer_progress_is_silent_off_a_terminal_and_with_json(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(output, "err", Console(file=buffer, force_terminal=False))
    with output.footer_progress() as update:
        assert update is None
    monkeypatch.setattr(output, "err", Console(file=buffer, force_terminal=True))
    with output.footer_progress(enabled=False) as update:  # --json
        assert update is None
    assert buffer.getvalue() == ""
