"""The state folder of this machine's hsh processes: ``$HSH_HOME``, default ``~/.local/state/hsh``.

It holds the embedded metastore and HiveServer2 (``metastore.local``), the compiled helpers
(:mod:`storage_handler.compiled`) and the scan metrics. One function, so every part agrees on where that is.
"""

from __future__ import annotations

import os
from pathlib import Path


def state_home() -> Path:
    """The state folder: ``$HSH_HOME`` or ``~/.local/state/hsh``."""
    return Path(os.environ.get("HSH_HOME") or Path.home() / ".local" / "state" / "hsh").expanduser().resolve()
