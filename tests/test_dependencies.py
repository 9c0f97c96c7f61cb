"""Every module of the library loads with what ``pip install harnessed`` installs.

A module-level import of a package that only happens to be in the developer's environment (for
instance ``httpx``, which ``openai`` 3 no longer depends on) works here and fails for every user.
The check runs each module in a fresh interpreter in which every package that is not a runtime
dependency (or a dependency of one) cannot be imported. Subpackages of optional extras are the
only modules allowed to need their extra.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

OPTIONAL = {
    "harnessed.mcp": "mcp",
    "harnessed.gateway.http": "serve",
    "harnessed.gateway.routes": "serve",
    "harnessed.gateway.fastpath": "serve",
    "harnessed.gateway.guard": "serve",
    "harnessed.gateway.guard_httptools": "serve",
    "harnessed.gateway.server": "serve",
    "harnessed.sandbox.server": "serve",
    "harnessed.gateway.channels.webhook": "webhook",
    "harnessed.gateway.channels.slack": "slack",
    "harnessed.gateway.channels.feishu": "feishu",
    "harnessed.gateway.channels.agui": "ag-ui",
    "harnessed.temporal": "temporal",
    "harnessed.web": "web",
}
"""Subpackage → the extra it needs (``pip install 'harnessed[mcp]'``)."""

_PROBE = textwrap.dedent(
    """
    import importlib, pkgutil, re, sys, tomllib
    from importlib import metadata
    from packaging.requirements import Requirement

    def canonical(name):
        return re.sub(r"[-_.]+", "-", name).lower()

    declared = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
    todo, runtime = [Requirement(text) for text in declared], set()
    while todo:
        req = todo.pop()
        if canonical(req.name) in runtime:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        runtime.add(canonical(req.name))
        todo.extend(Requirement(text) for text in metadata.requires(req.name) or ())
    providers = metadata.packages_distributions()

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            top = name.split(".")[0]
            if top in providers and top != "harnessed" and top not in sys.stdlib_module_names:
                if not {canonical(d) for d in providers[top]} & runtime:
                    raise ImportError(f"{top} is not a runtime dependency")
            return None

    sys.meta_path.insert(0, NotInstalled())
    import harnessed
    for info in pkgutil.walk_packages(harnessed.__path__, "harnessed."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError as exc:
            print(info.name, "|", exc)
    """
)


def modules_that_fail_without_extras() -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    failed = dict(line.split(" | ", 1) for line in done.stdout.splitlines() if " | " in line)
    return failed


def test_every_module_loads_without_extras_except_the_optional_subpackages() -> None:
    failed = modules_that_fail_without_extras()
    unexpected = {
        module: error
        for module, error in failed.items()
        if not any(module == p or module.startswith(p + ".") for p in OPTIONAL)
    }
    assert not unexpected, f"modules that need a package pip install harnessed lacks: {unexpected}"
    # the probe really blocks what is not a runtime dependency
    assert "mcp" in failed.get("harnessed.mcp", "")
    assert "fastapi" in failed.get("harnessed.gateway.http", "")
