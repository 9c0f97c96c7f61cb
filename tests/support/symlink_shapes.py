"""The link shapes the symlink isolation tests try, and the workspace they try them in.

A shape is *where* a link lives (the root, a project directory, a deeper one, the attacker's
own memory folder) times *how* its target is written. Every one of the
``len(ROOT_FORMS) * len(LOCATIONS)`` root shapes leads to the workspace root, from where the
rest of the path would walk into another user's data; :data:`HIDDEN_SHAPES` lead straight
into a hidden place (refused before the fix already, kept as a regression check).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SECRET = "alice-secret-4be19c"
PLANT = "bob-planted-ignore-all-rules-77d1"
SHARED = "team notes\n"

ALICE_FILES = {
    "agents/bot/users/alice/MEMORY.md": f"- Alice's PIN is {SECRET}\n",
    "agents/bot/users/alice/memory/2026-01-01.md": f"- the ledger holds {SECRET}\n",
    "agents/bot/users/alice/plans/PLAN.md": f"1. pay {SECRET}\n",
    "agents/bot/sessions/alice/s1.log.jsonl": json.dumps({"text": SECRET}) + "\n",
    "agents/researcher/sessions/alice/s1.log.jsonl": json.dumps({"sub": SECRET}) + "\n",
    ".harnessed/state/bot/alice/s1.json": json.dumps({"todos": [SECRET]}) + "\n",
    "large_tool_results/bot/alice/s1/big.txt": f"huge output {SECRET}\n",
}
"""One file of each kind of Alice's data the view hides from Bob."""

BOB_OWN = "agents/bot/users/bob/memory"
"""A folder in Bob's own scope (his commands can write links there)."""

LOCATIONS = ("", "proj", "proj/deep", BOB_OWN)
"""Where Bob's link lives."""


def _up(location: str) -> str:
    """The relative path from ``location`` back to the root (``.`` at the root)."""
    depth = len(location.split("/")) if location else 0
    return "/".join([".."] * depth) or "."


def _prefix(location: str) -> str:
    """``_up`` as a prefix for a path below the root (empty at the root)."""
    up = _up(location)
    return "" if up == "." else up + "/"


TargetFn = Callable[[str, Path, Path], str]
"""``(location, real root, given root) -> target text`` of the link."""

ROOT_FORMS: dict[str, TargetFn] = {
    "relative": lambda loc, real, given: _up(loc),
    "relative/": lambda loc, real, given: _up(loc) + "/",
    "detour": lambda loc, real, given: _prefix(loc) + "proj/..",
    "dot-segments": lambda loc, real, given: _prefix(loc) + "./proj/./../.",
    "absolute": lambda loc, real, given: str(real),
    "absolute/": lambda loc, real, given: str(real) + "/",
    "absolute-given": lambda loc, real, given: str(given),
    "to-a-link": lambda loc, real, given: _prefix(loc) + "hop",
    "through-a-link": lambda loc, real, given: _prefix(loc) + "hops/up",
}
"""How a target that leads to the root is written: relative (``.``, ``..``, ``../..``), with
a trailing slash, through a detour (``proj/..``), with ``.`` segments, absolute (the real
root, with a slash, and the path the workspace was given through an alias), to a link that
leads to the root (``hop -> .``), and through a directory holding such a link
(``hops/up -> ..``)."""


@dataclass(frozen=True, slots=True)
class Shape:
    location: str
    form: str
    target: TargetFn

    @property
    def id(self) -> str:
        return f"{self.location or 'root'}:{self.form}"

    @property
    def live(self) -> bool:
        """Does the link work at all? One lying in a runtime area (Bob's own scope) is never
        followed, whatever it leads to."""
        return not self.location.startswith("agents")

    @property
    def link(self) -> str:
        """The workspace path of the link."""
        return f"{self.location}/lnk" if self.location else "lnk"


ROOT_SHAPES = [Shape(loc, form, fn) for loc in LOCATIONS for form, fn in ROOT_FORMS.items()]


HIDDEN_SHAPES = [
    Shape("", "rel-agents", lambda loc, real, given: "agents"),
    Shape("", "rel-alice", lambda loc, real, given: "agents/bot/users/alice"),
    Shape("", "rel-alice-file", lambda loc, real, given: "agents/bot/users/alice/MEMORY.md"),
    Shape("", "abs-alice", lambda loc, real, given: str(real / "agents/bot/users/alice")),
    Shape("", "rel-state", lambda loc, real, given: ".harnessed"),
    Shape("proj", "rel-results", lambda loc, real, given: "../large_tool_results/bot/alice"),
    Shape(BOB_OWN, "out-of-own", lambda loc, real, given: "../../alice"),
    Shape(BOB_OWN, "out-of-own-file", lambda loc, real, given: "../../alice/MEMORY.md"),
    Shape("", "dangling-in-alice", lambda loc, real, given: "agents/bot/users/alice/new.md"),
    Shape("", "case-variant", lambda loc, real, given: "AGENTS/bot/users/alice"),
]
"""Links whose target itself is hidden (refused already before the fix)."""


RUN_MADE = (".harnessed/state/bot/alice/s1.json", "agents/bot/sessions/alice/s1.log.jsonl")
"""The files of :data:`ALICE_FILES` a real run of Alice's writes itself."""


def build_workspace(tmp_path: Path, *, run_made: bool = True) -> tuple[Path, Path]:
    """Alice's data, shared files and the helper links; returns ``(real root, given root)``.

    The workspace is given through an alias (a symlink to the real directory), as a
    deployment that mounts it behind a link would. ``run_made=False`` leaves out the files a
    real run of Alice's writes (:data:`RUN_MADE`).
    """
    real = tmp_path / "real"
    given = tmp_path / "given"
    real.mkdir()
    given.symlink_to(real, target_is_directory=True)
    for rel, text in ALICE_FILES.items():
        if not run_made and rel in RUN_MADE:
            continue
        (real / rel).parent.mkdir(parents=True, exist_ok=True)
        (real / rel).write_text(text)
    (real / "notes").mkdir()
    (real / "notes" / "shared.md").write_text(SHARED)
    (real / "proj" / "deep").mkdir(parents=True)
    (real / BOB_OWN).mkdir(parents=True)
    (real / "hop").symlink_to(".")
    (real / "hops").mkdir()
    (real / "hops" / "up").symlink_to("..")
    return real, given


def make_link(real: Path, given: Path, shape: Shape) -> str:
    """Create ``shape``'s link on disk; returns its workspace path."""
    os.symlink(shape.target(shape.location, real, given), real / shape.link)
    return shape.link


def alices_bytes(real: Path) -> dict[str, bytes]:
    """Every file below Alice's folders (to prove nothing changed and nothing was added)."""
    found: dict[str, bytes] = {}
    for top in ("agents", ".harnessed", "large_tool_results"):
        for path in (real / top).rglob("*"):
            rel = path.relative_to(real).as_posix()
            if "alice" in rel and path.is_file() and not path.is_symlink():
                found[rel] = path.read_bytes()
    return found
