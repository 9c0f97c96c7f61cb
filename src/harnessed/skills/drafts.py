"""Self-learning, opt-in: the model proposes skills as drafts; only the application installs
them.

A draft belongs to the user whose model proposed it. It lives in the harness's runtime area,
``agents/<agent>/skill_drafts/<user>/<name>/`` (ids encoded as path segments), which no
caller's view of the workspace shows: the model's file tools, ``grep``/``glob`` walks and the
sandbox's ``/workspace`` never reach a draft, of its own user or another's, and a draft is
never a skill the model can load. Beside the ``SKILL.md`` a ``.proposal.json`` written by the
harness records who proposed it, in which session and when; it is not installed with the
skill. :func:`write_draft` validates before writing (a draft is always a valid skill) and
only ever writes the caller's own folder; a folder whose record names someone else (two ids
that one case-insensitive disk stores in one folder) is refused.

Drafts written before drafts had owners (``skills/_drafts/<name>/``) are still listed, with
no proposer. :func:`promote_draft` validates again, copies the draft's files to
``skills/<name>/`` and removes the draft; :func:`reject_draft` removes it.
"""

from __future__ import annotations

import json
import posixpath
import time
from collections.abc import Sequence
from dataclasses import dataclass

from harnessed.skills.spec import SKILL_FILE, SkillFormatError, parse_skill_md
from harnessed.workspace import Filesystem
from harnessed.workspace.paths import encode_part, join

__all__ = [
    "DRAFTS_DIR",
    "AmbiguousDraftError",
    "LEGACY_DRAFTS_DIR",
    "PROPOSAL_FILE",
    "SkillDraft",
    "find_drafts",
    "pick_draft",
    "promote_draft",
    "reject_draft",
    "render_skill_md",
    "agent_drafts_dir",
    "user_drafts_dir",
    "write_draft",
]

DRAFTS_DIR = "skill_drafts"
"""The folder of an agent's drafts, inside ``agents/<agent>/`` (one sub-folder per user)."""
LEGACY_DRAFTS_DIR = "skills/_drafts"
"""Where drafts lived before they had owners (still listed, promoted and rejected)."""
PROPOSAL_FILE = ".proposal.json"
_SKILLS_DIR = "skills"
_AGENTS_DIR = "agents"


class AmbiguousDraftError(LookupError):
    """Several users proposed a draft of one name and the caller did not say whose."""

    def __init__(self, name: str, drafts: Sequence[SkillDraft]) -> None:
        self.name = name
        self.drafts = tuple(drafts)
        who = ", ".join(d.proposer for d in drafts)
        super().__init__(
            f"{len(drafts)} drafts are named {name!r} (proposed by {who}); pass user= to say "
            "whose to use"
        )


@dataclass(frozen=True, slots=True)
class SkillDraft:
    """A draft waiting for the application: its name, who proposed it and where it is."""

    name: str
    user_id: str | None
    """The user whose model proposed it (``None``: a draft from before drafts had owners)."""
    session_id: str | None
    proposed_at: float | None
    """When it was (last) proposed, seconds since the epoch."""
    folder: str
    """The draft's folder in the workspace."""

    @property
    def proposer(self) -> str:
        """Who proposed it, for people: ``alice (session s1)``, or ``unknown``."""
        if self.user_id is None:
            return "unknown (an unowned draft from skills/_drafts)"
        return f"{self.user_id} (session {self.session_id})" if self.session_id else self.user_id


def render_skill_md(
    name: str, description: str, instructions: str, allowed_tools: Sequence[str] = ()
) -> str:
    """A ``SKILL.md`` text for the given fields (front matter written by PyYAML)."""
    front: dict[str, str] = {"name": name, "description": description}
    if allowed_tools:
        front["allowed-tools"] = " ".join(allowed_tools)
    import yaml  # only when a draft is written

    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000)
    return f"---\n{head}---\n\n{instructions.strip()}\n"


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name or "/" in name or name.startswith(("_", ".")):
        raise ValueError(f"{name!r} is not a skill name")


def agent_drafts_dir(agent: str) -> str:
    """``agents/<agent>/skill_drafts``."""
    return join(_AGENTS_DIR, encode_part(agent or "agent", "agent name"), DRAFTS_DIR)


def user_drafts_dir(agent: str, user_id: str) -> str:
    """``agents/<agent>/skill_drafts/<user>``: the folder of one user's drafts."""
    return join(agent_drafts_dir(agent), encode_part(user_id, "user_id"))


async def _proposal(fs: Filesystem, folder: str) -> dict[str, object] | None:
    path = join(folder, PROPOSAL_FILE)
    if not await fs.exists(path):
        return None
    try:
        data = json.loads(await fs.read_text(path))
    except (ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


async def write_draft(
    fs: Filesystem,
    name: str,
    description: str,
    instructions: str,
    allowed_tools: Sequence[str],
    *,
    agent: str,
    user_id: str,
    session_id: str,
) -> str:
    """Validate and write ``user_id``'s draft ``name`` (replacing that user's earlier draft of
    the name); returns its folder. ``SkillFormatError`` names the rules broken and
    ``PermissionError`` a folder another user's draft holds (nothing is written then)."""
    _check_name(name)
    text = render_skill_md(name, description, instructions, allowed_tools)
    parse_skill_md(text, name, where=f"draft {name!r}", strict=True)
    if not instructions.strip():
        raise SkillFormatError(f"draft {name!r}", ["the instructions (body) are empty"])
    folder = join(user_drafts_dir(agent, user_id), name)
    record = await _proposal(fs, folder)
    if record is not None and record.get("user_id") != user_id:
        raise PermissionError(f"a draft named {name!r} of another user is stored there")
    if await fs.exists(folder):  # the user's earlier draft of this name: replaced whole
        await fs.delete(folder, recursive=True)
    proposal = {"user_id": user_id, "session_id": session_id, "proposed_at": time.time()}
    await fs.write_text(join(folder, PROPOSAL_FILE), json.dumps(proposal) + "\n")
    await fs.write_text(join(folder, SKILL_FILE), text)
    return folder


async def find_drafts(fs: Filesystem, agent: str) -> list[SkillDraft]:
    """Every draft of ``agent``'s users (and the unowned ones), by name then user."""
    found: list[SkillDraft] = []
    base = agent_drafts_dir(agent)
    if await fs.exists(base):
        for user_dir in await fs.ls(base):
            if not user_dir.is_dir:
                continue
            for entry in await fs.ls(user_dir.path):
                if entry.is_dir and await fs.exists(join(entry.path, SKILL_FILE)):
                    found.append(await _draft(fs, entry.path))
    if await fs.exists(LEGACY_DRAFTS_DIR):
        for entry in await fs.ls(LEGACY_DRAFTS_DIR):
            if entry.is_dir:
                name = posixpath.basename(entry.path)
                found.append(SkillDraft(name, None, None, None, entry.path))
    return sorted(found, key=lambda d: (d.name, d.user_id is not None, d.user_id or ""))


async def _draft(fs: Filesystem, folder: str) -> SkillDraft:
    record = await _proposal(fs, folder) or {}
    user = record.get("user_id")
    session = record.get("session_id")
    at = record.get("proposed_at")
    if not isinstance(user, str):  # a record gone missing: the folder still names the user
        from urllib.parse import unquote

        user = unquote(posixpath.basename(posixpath.dirname(folder)))
    return SkillDraft(
        posixpath.basename(folder),
        user,
        session if isinstance(session, str) else None,
        float(at) if isinstance(at, int | float) else None,
        folder,
    )


async def pick_draft(
    fs: Filesystem, agent: str, name: str, user_id: str | None = None
) -> SkillDraft:
    """The draft ``name`` (of ``user_id``, needed when several users proposed that name)."""
    _check_name(name)
    drafts = [d for d in await find_drafts(fs, agent) if d.name == name]
    if user_id is not None:
        drafts = [d for d in drafts if d.user_id == user_id]
    if not drafts:
        whose = f" proposed by {user_id!r}" if user_id is not None else ""
        raise LookupError(f"there is no draft skill named {name!r}{whose}")
    if len(drafts) > 1:
        raise AmbiguousDraftError(name, drafts)
    return drafts[0]


async def promote_draft(
    fs: Filesystem, agent: str, name: str, *, user_id: str | None = None, replace: bool = False
) -> SkillDraft:
    """Install the draft ``name`` as ``skills/<name>``; returns the draft that was installed
    (who proposed it). Other users' drafts of the same name stay drafts."""
    draft = await pick_draft(fs, agent, name, user_id)
    skill_md = join(draft.folder, SKILL_FILE)
    parse_skill_md(await fs.read_text(skill_md), name, where=skill_md, strict=True)
    target = join(_SKILLS_DIR, name)
    if await fs.exists(target):
        if not replace:
            raise FileExistsError(
                f"a skill {name!r} is already installed at {target}; pass replace=True to "
                "replace it"
            )
        await fs.delete(target, recursive=True)
    for path in await fs.list_tree(draft.folder):
        rel = path[len(draft.folder) + 1 :]
        if rel != PROPOSAL_FILE:
            await fs.write(join(target, rel), await fs.read(path))
    await fs.delete(draft.folder, recursive=True)
    return draft


async def reject_draft(
    fs: Filesystem, agent: str, name: str, *, user_id: str | None = None
) -> SkillDraft:
    """Delete the draft ``name`` (of ``user_id`` when several users proposed it)."""
    draft = await pick_draft(fs, agent, name, user_id)
    await fs.delete(draft.folder, recursive=True)
    return draft
