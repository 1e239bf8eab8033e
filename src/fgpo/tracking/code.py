"""Which source files a command runs: the module closure of its entry.

One rule for "the code changed": `dvc.yaml` declares each stage's closure as its code deps
(`tests/test_dvc_deps.py` keeps them equal), and the runs cache of the training stages is keyed
by the digest of the closure of the training code they share (`module_digest` of
`fgpo.runs.setting`), a part of what DVC declares for each: a finished run is reused unless a
module it ran changed.

A stage runs `fgpo <command>`: `cli.py` with its module-level imports, and the stage's module in
`fgpo.stages` with every `fgpo` module it imports, at module or function level, and the
`__init__.py` of each package on the way (importing a.b.c runs a and a.b first).
"""

from __future__ import annotations

import ast
import hashlib
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]
"""The folder holding the `fgpo` package (src/ in a checkout)."""
PACKAGE = __name__.partition(".")[0]
"""`fgpo`; entries are built from it (a string literal naming an fgpo module counts as an import
of it, see `imports`, and this module imports no stage)."""


def module_file(module: str) -> Path | None:
    """The source file of an `fgpo` module (a package's __init__.py), or None."""
    base = SRC.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    name = module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _dynamic_package(node: ast.Call) -> str | None:
    """`import_module(f"fgpo.pkg.{x}")` / `__import__(f"fgpo.pkg.{x}")` -> "fgpo.pkg"."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if name not in ("import_module", "__import__") or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        prefix = str(arg.values[0].value)
        if prefix.startswith("fgpo.") and prefix.endswith("."):
            return prefix.rstrip(".")
    return None


@cache
def imports(path: Path, top_level_only: bool = False) -> frozenset[str]:
    """The `fgpo` modules a file imports: import statements, module names given as strings, and
    f-string dynamic imports (expanded to the whole package they name)."""
    tree = ast.parse(path.read_text(), str(path))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = _package_of(path).split(".")
                pkg = pkg[:len(pkg) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)  # a submodule, if it is one
        elif isinstance(node, ast.Call) and (pkg := _dynamic_package(node)):
            found.update(module_name(p) for p in SRC.joinpath(*pkg.split(".")).glob("*.py"))
        elif isinstance(node, ast.Constant) and str(node.value).startswith("fgpo."):
            found.add(str(node.value))  # a module named for import_module, e.g. a backend
    return frozenset(m for m in found if m.split(".")[0] == "fgpo" and module_file(m))


def closure(entry: str, top_level_only: bool = False) -> set[Path]:
    """The files of `entry` and of every `fgpo` module it reaches, package __init__s included
    (`top_level_only`: of cli.py, only its module-level imports: each command imports its
    stage inside the command)."""
    seen: set[Path] = set()
    todo = [entry]
    while todo:
        module = todo.pop()
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            path = module_file(".".join(parts[:i]))
            if path is None or path in seen:
                continue
            seen.add(path)
            todo.extend(imports(path, top_level_only and path.name == "cli.py"))
    return seen


def stage_closure(stage: str) -> set[Path]:
    """The files `fgpo <command>` of DVC stage `stage` runs: what dvc.yaml declares for it."""
    return (closure(f"{PACKAGE}.stages.{stage}")
            | closure(f"{PACKAGE}.cli", top_level_only=True))


def module_digest(entry: str) -> str:
    """A digest of `entry`'s closure (paths and contents): changes exactly when one of the
    modules it runs changes."""
    h = hashlib.sha256()
    for path in sorted(closure(entry)):
        h.update(str(path.relative_to(SRC)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]
