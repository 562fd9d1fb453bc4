"""The allocator an indexing command uses: jemalloc (else the system's), unless the user chose one."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import pyarrow as pa
from storage_handler.stats.engines.memory import use_lean_allocator
use_lean_allocator()
print(pa.default_memory_pool().backend_name)
"""


def run(env_pool: str | None) -> str:
    import os

    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if env_pool is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = env_pool
    return subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, env=env,
                          check=True).stdout.strip()


def test_indexing_uses_a_lean_allocator() -> None:
    assert run(None) in ("jemalloc", "system")


def test_the_user_s_choice_wins() -> None:
    assert run("mimalloc") == "mimalloc"
