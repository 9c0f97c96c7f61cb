"""The Python code blocks of README.md and docs/, and the marks that say who runs them.

Every ```` ```python ```` block of the README and of the pages under ``docs/`` is preceded by
one of two HTML comments (invisible on the rendered page):

* ``<!-- example: tests/<path>.py -->``: that test module runs the block as it is printed.
  ``tests/docs/test_examples.py`` runs every block marked with its own path, each as a script
  in a fresh directory; a test module with a block of its own (one that needs a git
  repository or the PostgreSQL server, or checks more than the output) holds the marker text
  verbatim and finds its block with :func:`marked_example`.
* ``<!-- fragment -->``: a piece of a larger program, shown on purpose and not run.

An example may be followed by a ```` ```text title="Output" ```` block: what the script must
print, line for line (``...`` in a line stands for any text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

EXAMPLE = re.compile(r"<!-- example: (?P<test>tests/[\w/]+\.py) -->")
FRAGMENT = "<!-- fragment -->"
_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)(?P<attrs>[^\n]*)\n"
    r"(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.M | re.S,
)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    lang: str
    attrs: str
    code: str
    mark: str | None
    """The marker comment right before the block, if any."""
    output: str | None
    """The text of an ``Output`` block right after it, if any."""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def test(self) -> str | None:
        found = EXAMPLE.fullmatch(self.mark or "")
        return found.group("test") if found else None


def pages() -> list[Path]:
    """README.md and every Markdown page of the site."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def _dedent(body: str, indent: str) -> str:
    return "\n".join(
        line[len(indent) :] if line.startswith(indent) else line.lstrip()
        for line in body.splitlines()
    )


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, in order, with their marks and expected output."""
    text = page.read_text(encoding="utf-8")
    fences = list(_FENCE.finditer(text))
    found: list[Block] = []
    for index, fence in enumerate(fences):
        before = text[: fence.start()].rstrip().splitlines()
        last = before[-1].strip() if before else ""
        mark = last if last.startswith("<!--") else None
        output = None
        if index + 1 < len(fences):
            after = fences[index + 1]
            between = text[fence.end() : after.start()]
            if not between.strip() and 'title="Output"' in after.group("attrs"):
                output = _dedent(after.group("body"), after.group("indent"))
        found.append(
            Block(
                page=page,
                line=text.count("\n", 0, fence.start()) + 1,
                lang=fence.group("lang"),
                attrs=fence.group("attrs").strip(),
                code=_dedent(fence.group("body"), fence.group("indent")),
                mark=mark,
                output=output,
            )
        )
    return found


def python_blocks() -> list[Block]:
    """Every Python block of the README and the site."""
    return [b for page in pages() for b in blocks(page) if b.lang in ("python", "py")]


def examples_for(test: str) -> list[Block]:
    """The blocks whose mark names the test module ``test`` (a path from the repository root)."""
    return [b for b in python_blocks() if b.test == test]


def marked_example(marker: str) -> str:
    """The code of the one Python block marked with ``marker``, wherever it is."""
    found = [b for b in python_blocks() if b.mark == marker]
    assert len(found) == 1, f"exactly one block must follow {marker!r}, found {len(found)}"
    return found[0].code


def output_matches(expected: str, printed: str) -> bool:
    """Whether ``printed`` is ``expected`` line for line (trailing blanks aside), ``...``
    matching any text."""
    want = [line.rstrip() for line in expected.rstrip().splitlines()]
    got = [line.rstrip() for line in printed.rstrip().splitlines()]
    if len(want) != len(got):
        return False
    for pattern, line in zip(want, got, strict=True):
        regex = ".*".join(re.escape(part) for part in pattern.split("..."))
        if not re.fullmatch(regex, line):
            return False
    return True
