"""Every package the library imports when it is loaded is one its install brings.

A module-level import of a package that only happens to be in the developer's environment
(for instance ``httpx``, which ``openai`` 3 no longer depends on) works here and fails for every
user of ``pip install harnessed``. Optional extras are imported inside functions, on first use.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "harnessed"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_closure() -> set[str]:
    """The distributions ``pip install harnessed`` installs (no extras), canonical names."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    todo = [Requirement(text) for text in declared]
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = _canonical(requirement.name)
        if name in seen:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        seen.add(name)
        todo.extend(Requirement(text) for text in metadata.requires(requirement.name) or ())
    return seen


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def module_level_imports(tree: ast.Module) -> set[str]:
    """Top-level package names imported when the module is loaded (not in functions)."""
    found: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            todo.extend([*node.body, *node.orelse])
        elif isinstance(node, ast.Try):
            todo.extend([*node.body, *node.orelse, *node.finalbody])
            for handler in node.handlers:
                todo.extend(handler.body)
        elif isinstance(node, ast.With):
            todo.extend(node.body)
    return found


def test_module_level_imports_are_runtime_dependencies() -> None:
    closure = runtime_closure()
    providers = metadata.packages_distributions()
    missing: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for package in sorted(module_level_imports(tree)):
            if package == "harnessed" or package in sys.stdlib_module_names:
                continue
            dists = {_canonical(d) for d in providers.get(package, [])}
            if not dists & closure:
                missing.append(f"{path.relative_to(ROOT)}: {package} (from {sorted(dists)})")
    assert not missing, "imported at load time but not a runtime dependency:\n" + "\n".join(missing)


def test_the_check_sees_an_undeclared_import() -> None:
    tree = ast.parse("import json\nimport no_such_pkg\ndef f():\n    import lazy_pkg\n")
    assert module_level_imports(tree) == {"json", "no_such_pkg"}
    assert "pydantic" in runtime_closure() and "httpx" not in runtime_closure()
