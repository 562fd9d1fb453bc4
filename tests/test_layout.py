"""The package layout's import direction, checked on every import statement (function bodies included).

Layers, bottom first; a module may import its own layer and the layers below it, never one above. The README's
"Layout" section is this table in words. A new module belongs to the layer of its longest matching prefix; a
module no prefix matches fails here, so the map stays complete.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LAYERS: list[tuple[str, ...]] = [
    # the bottom: errors, where things live, build tools, Hive's path rules and types, the Java-Python contract
    ("storage_handler", "storage_handler.errors", "storage_handler.home", "storage_handler.toolchain",
     "storage_handler.hive_paths", "storage_handler.types", "storage_handler.contract", "storage_handler.compiled",
     "storage_handler.split", "storage_handler.table_desc", "storage_handler.job_conf", "storage_handler.work"),
    # the metastore client, its locks and addresses, the embedded metastore and HiveServer2 launchers
    ("metastore",),
    ("storage_handler.storage",),
    ("storage_handler.sarg", "storage_handler.expr"),
    ("storage_handler.decode",),
    # the statistics index, one concept per sub-package (see storage_handler/stats/__init__.py), on top of the
    # one home of the index's column names
    ("storage_handler.stats.columns",),
    ("storage_handler.stats.files",),
    ("storage_handler.stats.footers",),
    ("storage_handler.stats.membership",),
    ("storage_handler.stats.index",),
    ("storage_handler.stats.engines",),
    ("storage_handler.stats",),
    ("storage_handler.pruning",),
    ("storage_handler.catalog",),
    ("storage_handler.input_format", "storage_handler.meta_hook", "storage_handler.handler"),
    ("storage_handler.registration",),
    ("storage_handler.freshness",),
    ("storage_handler.spark",),
    ("storage_handler.cli", "storage_handler.demo", "pyspark_hsh"),
]


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), i)
    return None if best is None else best[1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, imported module) of every import of the project's own modules in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:  # `from pkg import sub` imports the sub-module when there is one
                candidate = f"{base}.{alias.name}"
                found.append((node.lineno, candidate if layer_of(candidate) is not None and
                               _is_module(candidate) else base))
    return [(line, name) for line, name in found if name.split(".")[0] in ("storage_handler", "metastore",
                                                                            "pyspark_hsh")]


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def sources() -> list[Path]:
    return sorted([*(ROOT / "storage_handler").rglob("*.py"), *(ROOT / "metastore").rglob("*.py"),
                   ROOT / "pyspark_hsh.py"])


def test_every_module_has_a_layer() -> None:
    missing = [module_name(p) for p in sources() if layer_of(module_name(p)) is None]
    assert not missing, f"modules outside the layer map of tests/test_layout.py: {missing}"


@pytest.mark.parametrize("path", sources(), ids=lambda p: module_name(p))
def test_imports_go_down_only(path: Path) -> None:
    module = module_name(path)
    own = layer_of(module)
    assert own is not None
    upward = [f"line {line}: {name} (layer {layer_of(name)} > {own})" for line, name in imports(path, module)
              if (layer_of(name) or 0) > own]
    assert not upward, f"{module} imports upward: {upward}"


def test_the_check_catches_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: the metastore importing the handler is an upward import."""
    assert layer_of("metastore.client") < layer_of("storage_handler.handler")  # type: ignore[operator]
    assert layer_of("storage_handler.stats.files.walk") < layer_of("storage_handler.stats.engines.local")  # type: ignore[operator]
