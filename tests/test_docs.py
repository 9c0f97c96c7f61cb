"""The documentation: the site builds strictly, and every Python block is run or marked.

See ``tests/support/docs.py`` for the marks; ``tests/docs/test_examples.py`` runs the examples.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.docs import (
    EXAMPLE,
    FRAGMENT,
    README,
    ROOT,
    examples_for,
    pages,
    python_blocks,
)

MAX_FRAGMENTS = 30  # blocks that need a platform, a server or an API key to run, or are excerpts
"""Fragments are for pieces that cannot stand alone; a runnable example is better."""


def _mkdocs() -> list[str]:
    if importlib.util.find_spec("mkdocs") is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs is not installed (pip install -e '.[dev]')")
        pytest.skip("mkdocs is not installed")
    return [sys.executable, "-m", "mkdocs"]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_mkdocs(), "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "agent" / "index.html").exists()
    html = (tmp_path / "site" / "reference" / "agent" / "index.html").read_text("utf-8")
    assert "HarnessAgent" in html and "stream_events" in html  # members were rendered


def _small_site(tmp_path: Path, page: str) -> Path:
    """The project's configuration over a site of two pages, ``index.md`` being ``page``."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config["nav"] = [{"Home": "index.md"}, {"Other": "other.md"}]
    config["docs_dir"] = "docs"
    python = config["plugins"][1]["mkdocstrings"]["handlers"]["python"]
    python["paths"] = [str(ROOT / "src")]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(page, encoding="utf-8")
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## A section\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return tmp_path / "mkdocs.yml"


def test_a_small_site_with_the_project_configuration_builds(tmp_path: Path) -> None:
    page = "# Home\n\nSee [other](other.md#a-section).\n\n::: harnessed.RuntimeContext\n"
    done = _build(_small_site(tmp_path, page), tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("page", "named"),
    [
        ("# Home\n\nSee [the missing page](missing.md).\n", "missing.md"),
        ("# Home\n\nSee [a missing section](other.md#no-such-section).\n", "no-such-section"),
        ("# Home\n\n::: harnessed.NoSuchName\n", "harnessed.NoSuchName"),
        ("# Home\n\nSee [an absolute link](/docs/other.md).\n", "/docs/other.md"),
    ],
    ids=["page", "anchor", "reference", "absolute"],
)
def test_a_broken_link_or_reference_fails_the_build(tmp_path: Path, page: str, named: str) -> None:
    done = _build(_small_site(tmp_path, page), tmp_path / "site")
    assert done.returncode != 0, done.stdout + done.stderr
    assert named in done.stdout + done.stderr


def test_every_python_block_is_run_by_a_test_or_marked_as_a_fragment() -> None:
    blocks = python_blocks()
    assert len(blocks) > 20
    unmarked = [b.where for b in blocks if b.mark != FRAGMENT and b.test is None]
    assert not unmarked, f"mark these with <!-- example: tests/... --> or {FRAGMENT}: {unmarked}"
    fragments = [b.where for b in blocks if b.mark == FRAGMENT]
    assert len(fragments) <= MAX_FRAGMENTS, fragments


def test_each_named_test_module_exists_and_runs_its_blocks() -> None:
    for test in {b.test for b in python_blocks() if b.test is not None}:
        module = ROOT / test
        assert module.is_file(), f"{test} is named by a docs example but does not exist"
        marker = f"<!-- example: {test} -->"
        assert EXAMPLE.fullmatch(marker)
        assert marker in module.read_text(encoding="utf-8"), f"{test} must use {marker!r}"
        if test != "tests/docs/test_examples.py":  # that one runs every block it is named by
            assert len(examples_for(test)) == 1, f"{test} runs one block; mark only that one"


def test_the_readme_quick_start_is_run() -> None:
    assert any(b.page == README for b in examples_for("tests/docs/test_examples.py"))


_IMPORT = re.compile(r"^\s*from (harnessed[\w.]*) import (\([^)]*\)|[^\n]+)", re.M)


def test_the_names_the_docs_import_exist() -> None:
    for block in python_blocks():
        for module, names in _IMPORT.findall(block.code):
            imported = importlib.import_module(module)
            listed = re.sub(r"#[^\n]*", "", names).strip().strip("()")
            for name in (n.strip().split(" as ")[0] for n in listed.split(",")):
                if name and name != "...":
                    assert hasattr(imported, name), f"{block.where}: from {module} import {name}"


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_links_to_pages_that_exist() -> None:
    for target in _LINK.findall(README.read_text(encoding="utf-8")):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def test_every_page_is_in_the_navigation() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def entries(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, list):
            return [e for item in nav for e in entries(item)]
        if isinstance(nav, dict):
            return [e for value in nav.values() for e in entries(value)]
        return []

    listed = set(entries(config["nav"]))
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in pages() if p != README}
    assert on_disk == listed
