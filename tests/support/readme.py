"""The README's code blocks that tests run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def marked_example(marker: str) -> str:
    """The Python code block right after the HTML comment ``marker`` in the README."""
    text = README.read_text(encoding="utf-8")
    start = text.index(marker) + len(marker)
    match = re.compile(r"\s*```python\n(.*?)\n```", re.S).match(text, start)
    assert match is not None, "the README example must follow its marker"
    return match.group(1)
