"""SKILL.md samples: shapes found in public skill collections, and one per broken rule."""

from __future__ import annotations

from pathlib import Path

# Shapes of skills published by others (written here in their shape): folded and quoted
# descriptions, a licence pointing at a bundled file, metadata with numbers kept as text,
# allowed-tools with argument patterns, CRLF line endings, an empty body.
VALID: dict[str, str] = {
    "minimal": "---\nname: minimal\ndescription: Does one small thing.\n---\n",
    "pdf-processing": (
        "---\n"
        "name: pdf-processing\n"
        "description: >\n"
        "  Extract text and tables from PDF files, fill PDF forms and merge documents.\n"
        "  Use when the user mentions PDFs, forms or document extraction.\n"
        "license: Proprietary. LICENSE.txt has complete terms\n"
        "compatibility: Requires Python 3.11+ with pdfplumber and pypdf installed\n"
        "metadata:\n"
        "  author: example-org\n"
        '  version: "1.0"\n'
        "allowed-tools: Bash(python3:*) Read\n"
        "---\n\n# PDF processing\n\n## Extract text\nRun `python3 scripts/extract.py FILE`.\n"
    ),
    "release-notes": (
        "---\n"
        'name: "release-notes"\n'
        'description: "Write release notes: group merged changes by area, in plain words."\n'
        "metadata:\n"
        "  version: 1.10\n"
        "  internal: yes\n"
        "---\n# Release notes\n\n1. List merged pull requests.\n"
    ),
    "crlf-skill": (
        "---\r\nname: crlf-skill\r\ndescription: Saved with Windows line endings.\r\n---\r\n"
        "# Body\r\n"
    ),
    "git-helper": (
        "---\n"
        "name: git-helper\n"
        "description: |\n"
        "  Safe git workflows.\n"
        "  Use before committing or rebasing.\n"
        "allowed-tools: Bash(git status:*) Bash(git diff:*) Read Grep\n"
        "license: MIT\n"
        "---\n\nAlways run `git status` first.\n"
    ),
    "a": "---\nname: a\ndescription: The shortest possible name.\n---\nbody\n",
    "data-2-csv": "---\nname: data-2-csv\ndescription: Digits are fine.\n---\n",
    # Public-collection shapes: a long folded description, a licence naming LICENSE.txt, a
    # space-separated allowed-tools text.
    "docx-editing": (
        "---\n"
        "name: docx-editing\n"
        "description: >-\n"
        "  Create, edit and review Word documents (.docx): tracked changes, comments,\n"
        "  styles, tables and headers. Use it whenever a task involves a .docx file, whether\n"
        "  the user wants a new document from notes, a change to an existing one with its\n"
        "  formatting kept intact, a summary of the comments left by reviewers, or a tidy\n"
        "  export to PDF for sharing. Keep to the document's own styles; never flatten them.\n"
        "license: Proprietary. LICENSE.txt has complete terms\n"
        "allowed-tools: Read Write Bash\n"
        "---\n\n# Word documents\n\nUnpack, edit the XML, pack again.\n"
    ),
    "theme-kit": (
        "---\n"
        "name: theme-kit\n"
        'description: "Apply a colour theme to slides, docs or pages: pick one of ten,\n'
        "  or build one from a brand's colours.\"\n"
        "license: Complete terms in LICENSE.txt\n"
        "---\n# Themes\n"
    ),
    "plain-wrapped": (
        "---\n"
        "name: plain-wrapped\n"
        "description: A plain description that goes on\n"
        "  over a second line without any block indicator.\n"
        "---\n"
    ),
    # Shapes the reference accepts though the standard asks for text: normalized with a note.
    "rich-metadata": (
        "---\n"
        "name: rich-metadata\n"
        "description: Metadata values that are lists, numbers and maps.\n"
        "metadata:\n"
        "  version: 2\n"
        "  tags:\n"
        "    - docs\n"
        "    - office\n"
        "  owner:\n"
        "    team: docs\n"
        "---\n"
    ),
    "odd-fields": (
        "---\n"
        "name: odd-fields\n"
        "description: A licence list, a metadata text and an allowed-tools map.\n"
        "license:\n"
        "  - MIT\n"
        "  - Apache-2.0\n"
        "metadata: internal\n"
        "allowed-tools:\n"
        "  Bash: yes\n"
        "---\n"
    ),
}

# Skills whose file is the lower-case ``skill.md`` the reference also accepts.
LOWER_CASE_FILE: dict[str, str] = {
    "lower-file": "---\nname: lower-file\ndescription: Its file is skill.md.\n---\n# Body\n",
}

# One broken rule each: (folder name, SKILL.md text, words the problem must contain).
INVALID: dict[str, tuple[str, str, str]] = {
    "no front matter": ("plain", "# Just markdown\n", "must start with YAML front matter"),
    "unclosed front matter": ("open", "---\nname: open\ndescription: x\n", "not closed"),
    "not yaml": ("bad-yaml", "---\nname: [bad\ndescription: x\n---\n", "not valid YAML"),
    "not a mapping": ("listy", "---\n- a\n- b\n---\n", "YAML mapping"),
    "missing name": ("no-name", "---\ndescription: x\n---\n", "'name' is missing"),
    "empty name": ("empty-name", "---\nname: ''\ndescription: x\n---\n", "'name' must be"),
    "upper case": ("PDF-Tool", "---\nname: PDF-Tool\ndescription: x\n---\n", "lower case"),
    "leading hyphen": ("-pdf", "---\nname: -pdf\ndescription: x\n---\n", "start or end"),
    "trailing hyphen": ("pdf-", "---\nname: pdf-\ndescription: x\n---\n", "start or end"),
    "double hyphen": ("pdf--x", "---\nname: pdf--x\ndescription: x\n---\n", "two hyphens"),
    "underscore": ("pdf_x", "---\nname: pdf_x\ndescription: x\n---\n", "letters, digits"),
    "space": ("pdf x", "---\nname: pdf x\ndescription: x\n---\n", "letters, digits"),
    "too long name": ("n" * 65, f"---\nname: {'n' * 65}\ndescription: x\n---\n", "at most 64"),
    "folder mismatch": ("other", "---\nname: mine\ndescription: x\n---\n", "differs from"),
    "missing description": ("no-desc", "---\nname: no-desc\n---\n", "'description' is missing"),
    "empty description": (
        "blank",
        "---\nname: blank\ndescription: '  '\n---\n",
        "'description' must",
    ),
    "too long description": (
        "long-desc",
        f"---\nname: long-desc\ndescription: {'d' * 1025}\n---\n",
        "at most 1024",
    ),
    "too long compatibility": (
        "compat",
        f"---\nname: compat\ndescription: x\ncompatibility: {'c' * 501}\n---\n",
        "at most 500",
    ),
    "compatibility not text": (
        "compat-map",
        "---\nname: compat-map\ndescription: x\ncompatibility:\n  python: '3.11'\n---\n",
        "'compatibility' must be text",
    ),
    "unknown field": (
        "extra",
        "---\nname: extra\ndescription: x\nversion: 1.0.2\n---\n",
        "unknown field(s) version",
    ),
    "duplicate key": (
        "twice",
        "---\nname: twice\nname: twice\ndescription: x\n---\n",
        "duplicate key",
    ),
    "anchor and alias": (
        "anchored",
        "---\nname: anchored\ndescription: &d Shared text.\nlicense: *d\n---\n",
        "anchors (&name) are not allowed",
    ),
    "explicit tag": (
        "typed",
        "---\nname: typed\ndescription: !!str Typed text.\n---\n",
        "type tags (!!type) are not allowed",
    ),
    "flow mapping": (
        "flowy",
        "---\nname: flowy\ndescription: x\nmetadata: {a: b}\n---\n",
        "flow-style",
    ),
}


def write_skill(root: Path, folder: str, text: str, file: str = "SKILL.md") -> Path:
    path = root / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / file).write_bytes(text.encode("utf-8"))
    return path
