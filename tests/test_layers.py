"""The package layers of DESIGN.md hold: each layer imports only those below it, no cycles.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``); ``lint-imports`` checks
them on the code as it is. The exceptions are listed there, each with its reason, and may only
shrink.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
KNOWN_EXCEPTIONS = 1


def lint(config: Path | None = None) -> subprocess.CompletedProcess[str]:
    args = [str(Path(sys.executable).with_name("lint-imports"))]
    if config is not None:
        args += ["--config", str(config)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_layers_contract_is_kept() -> None:
    done = lint()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 kept, 0 broken" in done.stdout


def test_the_contract_covers_every_package_and_its_exceptions_do_not_grow() -> None:
    (layers, cycles) = CONFIG["contracts"]
    named = {
        part.strip() for layer in layers["layers"] for part in layer.replace("|", ":").split(":")
    }
    children = {
        p.stem if p.is_file() else p.name
        for p in (ROOT / "src" / "harnessed").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()
    }
    assert children - {"__main__"} <= named, f"packages missing from the layers: {children - named}"
    assert len(layers["ignore_imports"]) <= KNOWN_EXCEPTIONS
    assert cycles["type"] == "acyclic_siblings" and cycles["ancestors"] == ["harnessed"]


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The check can fail: a copy of the config without its exceptions is broken."""
    text = (ROOT / "pyproject.toml").read_text()
    start = text.index("[tool.importlinter]")
    section = text[start:]
    stripped = "\n".join(
        line for line in section.splitlines() if "->" not in line or line.lstrip().startswith("#")
    )
    config = tmp_path / "importlinter.toml"
    config.write_text(stripped)
    done = lint(config)
    assert done.returncode != 0
    assert "harnessed.agent_sessions is not allowed to import harnessed.sessions" in done.stdout
