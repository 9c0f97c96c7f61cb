"""``Skills``: the Agent Skills capability of a :class:`~harnessed.HarnessAgent`.

* Layers, low → high (a higher one wins a name clash): the application's ``skill_dirs``
  (local folders or fsspec URLs), the workspace's ``skills/``, and the user's own ``skills/``
  beside the user's memory (``agents/<agent>/users/<user>/skills`` in the default isolation
  scope). Layers are rescanned at each call; unchanged layers cost a listing (and a stat per
  skill on local disk), nothing is re-read or re-parsed.
* Each reasoning request lists the skills in the instructions; the list shrinks to fit
  (descriptions first, see :mod:`harnessed.skills.listing`).
* ``load_skill(name, path="SKILL.md")`` returns the instructions or a file of the skill, and
  activates the skill: its ``allowed-tools`` become permission grants of the session (deny and
  ask rules still win). Each load is counted (:meth:`Skills.usage`).
* ``propose_skill`` (only with ``self_learning=True``) writes a validated draft that belongs
  to the calling user and that no model's file tools or commands can see (see
  :mod:`harnessed.skills.drafts`); the application lists the drafts with who proposed them
  (:meth:`Skills.drafts`), installs one with :meth:`Skills.promote` or drops it with
  :meth:`Skills.reject`.
* Scripts run through ``execute``: a skill's folder is shown to the model as a path ``execute``
  can use (``skills/<name>`` for workspace skills, the absolute folder for local
  ``skill_dirs``; a skill of a remote layer is copied to a local folder first).
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harnessed.capabilities.base import CallContext, Capability, CapabilityHost
from harnessed.capabilities.materials import Material
from harnessed.capabilities.queries import SkillFolders, SkillsSandbox
from harnessed.messages import ToolUseBlock
from harnessed.models.base import ToolSchema
from harnessed.permissions.state import PERMISSIONS
from harnessed.runtime import RuntimeContext
from harnessed.skills.catalog import Skill, SkillCatalog, SkillLayer, SkillProblem
from harnessed.skills.drafts import SkillDraft, find_drafts, promote_draft, reject_draft
from harnessed.skills.grants import grants_for
from harnessed.skills.guard import skill_write_refusal
from harnessed.skills.listing import skill_listing
from harnessed.skills.mounts import SANDBOX_SKILLS_ROOT, SkillMount, host_dir
from harnessed.skills.tools import load_skill_tool, propose_skill_tool
from harnessed.state.agent_state import AgentState
from harnessed.tokens import TokenEstimator, default_estimator
from harnessed.tools.base import Tool
from harnessed.tools.context import ToolContext
from harnessed.workspace import (
    Filesystem,
    FsspecFilesystem,
    LocalFilesystem,
    Workspace,
)

__all__ = ["Skills"]

LOAD_SKILL = "load_skill"

logger = logging.getLogger(__name__)

_KEPT_LISTINGS = 64

SkillDir = str | os.PathLike[str] | Filesystem


class Skills(Capability):
    """Agent Skills for an agent (see the module docstring).

    Args:
        skill_dirs: The application's skill folders (lowest layers, in order): local paths,
            fsspec URLs (``s3://bucket/skills``) or :class:`Filesystem` objects.
        workspace_skills: Use the workspace's ``skills/`` folder (default on).
        user_skills: Use the user's own ``skills/`` folder (default on).
        self_learning: Give the model ``propose_skill`` (default off).
        max_listing_tokens: Cap of the skill list in the instructions (default 4,000); the
            compiler may shrink it further to fit the request.
        storage_options: Options for the fsspec filesystems of URL ``skill_dirs``.
        sandbox_root: Where the sandbox that runs ``execute`` mounts the skill folders (see
            :meth:`mounts`), e.g. ``"/skills"``; ``None`` (default): ``execute`` runs on the
            host and the model is given host paths.
        model_edits_skills: Let the model's ``write_file`` / ``edit_file`` change the
            workspace's and the user's skill folders (default off: a skill it wrote could
            pre-approve any tool for itself; see :mod:`harnessed.skills.guard`); local
            ``skill_dirs`` inside the workspace are protected the same way.
    """

    name = "skills"

    def __init__(
        self,
        skill_dirs: Sequence[SkillDir] = (),
        *,
        workspace_skills: bool = True,
        user_skills: bool = True,
        self_learning: bool = False,
        max_listing_tokens: int | None = 4_000,
        storage_options: dict[str, Any] | None = None,
        sandbox_root: str | None = None,
        model_edits_skills: bool = False,
    ) -> None:
        if isinstance(skill_dirs, str | os.PathLike):
            raise TypeError("Skills skill_dirs must be a list of folders, not one folder")
        if max_listing_tokens is not None and max_listing_tokens <= 0:
            raise ValueError("Skills max_listing_tokens must be positive or None")
        self.app_layers = tuple(
            _layer(f"skill_dirs[{i}]", d, storage_options or {}) for i, d in enumerate(skill_dirs)
        )
        if sandbox_root is not None and not sandbox_root.startswith("/"):
            raise ValueError("Skills sandbox_root must be an absolute path inside the sandbox")
        self.sandbox_root = sandbox_root.rstrip("/") if sandbox_root is not None else None
        self.workspace_skills = workspace_skills
        self.user_skills = user_skills
        self.self_learning = self_learning
        self.model_edits_skills = model_edits_skills
        self.max_listing_tokens = max_listing_tokens
        self.catalog = SkillCatalog()
        self.workspace: Workspace | None = None
        self.agent_name = ""
        self.estimator: TokenEstimator = default_estimator()
        self._memory_usage: dict[str, int] = {}
        self._listings: dict[tuple[tuple[str, str], ...], Material | None] = {}
        self._sandbox: SkillsSandbox | None = None
        """Whether ``execute`` runs in a sandbox that mounts the skills (the shell's view)."""

    # ------------------------------------------------------------ capability
    def views(self) -> Sequence[object]:
        return (SkillFolders(self.model_edits_skills, self._mount_pairs),)

    def setup(self, host: CapabilityHost) -> None:
        self._sandbox = host.query(SkillsSandbox)
        self.bind(host.workspace, host.agent_name, host.estimator)

    def tools(self) -> Sequence[Tool]:
        found = [load_skill_tool(self)]
        if self.self_learning:
            found.append(propose_skill_tool(self))
        return found

    async def before_model_request(self, call: CallContext) -> None:
        # load_skill is offered only when the caller has a skill to load; the listing of the
        # request prepared next uses the same scan
        call.values[self.capability_name] = await self.available(call.runtime)
        revoked = await self.revoke_stale_grants(call.state, call.runtime)
        if revoked:
            call.emit("skill_grants_revoked", {"skills": revoked})

    def filter_tools(self, call: CallContext, tools: Sequence[ToolSchema]) -> Sequence[ToolSchema]:
        if call.values.get(self.capability_name):
            return tools
        return [t for t in tools if t.name != LOAD_SKILL]  # nothing to load for this caller

    async def before_tool_call(
        self, call: CallContext, tool_call: ToolUseBlock, tool: Tool
    ) -> str | None:
        ws = self.workspace
        if self.model_edits_skills or ws is None:
            return None
        roots = [la.root for la in self.layers(call.runtime) if la.fs is ws.fs and la.root]
        roots += _roots_inside(ws, self.app_layers)
        return skill_write_refusal(tool_call.name, tool_call.input, ws.fs, roots)

    async def call_instructions(self, call: CallContext) -> Material | None:
        """The list of the skills this caller can load (shrinks to fit the request)."""
        scanned = call.values.get(self.capability_name)
        skills = scanned if isinstance(scanned, list) else await self.available(call.runtime)
        key = tuple((s.name, s.revision) for s in skills)
        listing = self._listings.get(key)
        if listing is None:  # built again only when a caller's set of skills changed
            listing = skill_listing(
                skills, max_tokens=self.max_listing_tokens, count=self.estimator.count_text
            )
            self._listings[key] = listing
            while len(self._listings) > _KEPT_LISTINGS:
                self._listings.pop(next(iter(self._listings)))
        return listing

    # ------------------------------------------------------------ application API
    def bind(
        self,
        workspace: Workspace | None,
        agent_name: str,
        estimator: TokenEstimator | None = None,
    ) -> None:
        """Use the skills without an agent (the CLI does): the workspace whose ``skills/``
        folders are layers, and the agent whose users' folders are looked at."""
        if self.self_learning and workspace is None:
            raise ValueError("Skills(self_learning=True) needs a workspace for its drafts")
        self.workspace = workspace
        self.agent_name = agent_name
        self.estimator = estimator or self.estimator

    def layers(self, ctx: RuntimeContext | None = None) -> list[SkillLayer]:
        """The layers for a caller, low → high."""
        found = list(self.app_layers)
        ws = self.workspace
        if ws is not None and self.workspace_skills:
            found.append(SkillLayer("workspace", ws.fs, ws.SKILLS_DIR))
        if ws is not None and self.user_skills:
            ctx = (ctx or RuntimeContext()).resolved(self.agent_name or "agent")
            home = posixpath.dirname(
                ws.memory_file(
                    agent_id=self.agent_name, user_id=ctx.user_id, session_id=ctx.session
                )
            )
            if home:  # the global scope has no user folder: it is the workspace's
                found.append(SkillLayer("user", ws.fs, posixpath.join(home, ws.SKILLS_DIR)))
        return found

    async def available(self, ctx: RuntimeContext | None = None) -> list[Skill]:
        """The valid skills a caller sees (rescanned when files changed), by name."""
        skills, _ = await self.catalog.resolve(self.layers(ctx))
        return list(skills.values())

    async def problems(self, ctx: RuntimeContext | None = None) -> list[SkillProblem]:
        """Skill folders that were skipped, with the rules they break."""
        _, problems = await self.catalog.resolve(self.layers(ctx))
        return problems

    async def get(self, name: str, ctx: RuntimeContext | None = None) -> Skill:
        skills, _ = await self.catalog.resolve(self.layers(ctx))
        skill = skills.get(name)
        if skill is None:
            known = ", ".join(skills) or "none"
            raise LookupError(f"there is no skill named {name!r} (available: {known})")
        return skill

    async def drafts(self) -> list[SkillDraft]:
        """The drafts waiting for review, each with who proposed it (by name, then user)."""
        return await find_drafts(self.drafts_fs(), self.agent_name)

    async def promote(
        self, name: str, *, user: str | None = None, replace: bool = False
    ) -> SkillDraft:
        """Install the draft ``name`` as a workspace skill (the next call sees it); returns
        the draft, which names who proposed it. When several users proposed a draft of that
        name, ``user`` says whose (otherwise ``LookupError`` lists them); the others stay
        drafts."""
        draft = await promote_draft(
            self.drafts_fs(), self.agent_name, name, user_id=user, replace=replace
        )
        logger.info("installed skill %r proposed by %s", name, draft.proposer)
        return draft

    async def reject(self, name: str, *, user: str | None = None) -> SkillDraft:
        """Delete the draft ``name`` (``user``: whose, when several users proposed it)."""
        return await reject_draft(self.drafts_fs(), self.agent_name, name, user_id=user)

    async def usage(self) -> dict[str, int]:
        """How many times each skill was loaded (by this agent, all users)."""
        counts: dict[str, int] = {}
        if self.workspace is None:
            return dict(self._memory_usage)
        path = self._usage_path()
        if not await self.workspace.fs.exists(path):
            return counts
        for line in (await self.workspace.fs.read_text(path)).splitlines():
            try:
                skill = json.loads(line)["skill"]
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line
            counts[skill] = counts.get(skill, 0) + 1
        return counts

    async def execute_path(self, skill: Skill) -> str | None:
        """Where ``execute`` finds the skill's folder: under ``sandbox_root`` when a sandbox
        mounts the skills (see :meth:`mounts`), else ``skills/<name>`` for workspace skills
        (execute runs in the workspace) or a folder on local disk; ``None`` when there is no
        local disk to run from."""
        root = self.sandbox_root
        if root is None and self._sandbox is not None and self._sandbox.mounted():
            root = SANDBOX_SKILLS_ROOT  # paths inside the sandbox, not the host's
        if root is not None:
            return f"{root}/{skill.name}"
        ws = self.workspace
        if ws is not None and ws.local_root is not None and skill.layer.fs is ws.fs:
            return skill.folder
        local = await self.host_dir(skill)
        return str(local) if local is not None else None

    async def host_dir(self, skill: Skill) -> Path | None:
        """The skill's folder on local disk: the folder itself for local layers, a copy
        (refreshed when any file of the skill changed) for remote ones."""
        return await host_dir(skill, self._copies_dir())

    async def mounts(self, ctx: RuntimeContext | None = None) -> list[SkillMount]:
        """What a sandbox binds read-only for a caller: each visible skill's local folder at
        ``<sandbox_root>/<name>`` (``/skills/<name>`` by default)."""
        root = self.sandbox_root or SANDBOX_SKILLS_ROOT
        found: list[SkillMount] = []
        for skill in await self.available(ctx):
            source = await self.host_dir(skill)
            if source is not None:
                found.append(SkillMount(skill.name, source, f"{root}/{skill.name}"))
        return found

    async def _mount_pairs(self, ctx: RuntimeContext) -> list[tuple[str, str]]:
        return [(str(m.source), m.target) for m in await self.mounts(ctx)]

    # ------------------------------------------------------------ internals
    def drafts_fs(self) -> Filesystem:
        """The filesystem drafts are written to (the workspace's)."""
        if self.workspace is None:
            raise ValueError("skill drafts need a workspace")
        return self.workspace.fs

    def _usage_path(self) -> str:
        return posixpath.join("agents", self.agent_name or "agent", "skills", "usage.jsonl")

    async def record_use(self, skill: Skill, context: ToolContext) -> None:
        """Count one load of ``skill`` (and tell the event stream)."""
        entry = {
            "skill": skill.name,
            "layer": skill.layer.label,
            "user": context.user_id,
            "session": context.session_id,
            "at": time.time(),
        }
        if self.workspace is None:
            self._memory_usage[skill.name] = self._memory_usage.get(skill.name, 0) + 1
        else:
            await self.workspace.fs.append_text(self._usage_path(), json.dumps(entry) + "\n")
        context.emit("skill_loaded", {"skill": skill.name, "layer": skill.layer.label})

    def activate(self, skill: Skill, state: AgentState) -> list[str]:
        """Grant the skill's ``allowed-tools`` to the session; returns what was granted.

        Each grant names the skill and the revision of its ``SKILL.md``: when that file
        changes or goes, :meth:`revoke_stale_grants` takes the grants back."""
        rules = grants_for(skill.meta.allowed_tools, skill.name)
        if not rules:
            return []
        tag = {"skill": skill.name, "revision": skill.revision}
        current = [
            g
            for g in state.get(PERMISSIONS).get("grants") or []
            if not (isinstance(g, dict) and g.get("skill") == skill.name)
        ]  # an earlier revision's grants are replaced by this one's
        added = [{**r.to_dict(), **tag} for r in rules]
        settings = state.get(PERMISSIONS)
        state.put(PERMISSIONS, {**settings, "grants": current + added})
        return [r.describe() for r in rules]

    async def revoke_stale_grants(
        self, state: AgentState, ctx: RuntimeContext | None = None
    ) -> list[str]:
        """Take back the grants of skills whose ``SKILL.md`` changed or disappeared since they
        were loaded (the model loads a skill again to get its current grants); returns the
        skills whose grants went. Costs nothing when no skill granted anything."""
        grants = state.get(PERMISSIONS).get("grants") or []
        from_skills = [g for g in grants if isinstance(g, dict) and "skill" in g]
        if not from_skills:
            return []
        skills, _ = await self.catalog.resolve(self.layers(ctx))
        current = {name: skill.revision for name, skill in skills.items()}
        stale = sorted(
            {g["skill"] for g in from_skills if current.get(g["skill"]) != g.get("revision")}
        )
        if stale:
            kept = [g for g in grants if not (isinstance(g, dict) and g.get("skill") in stale)]
            settings = state.get(PERMISSIONS)
            state.put(PERMISSIONS, {**settings, "grants": kept})
        return stale

    def _copies_dir(self) -> Path:
        ws = self.workspace
        if ws is not None and ws.data_root is not None:
            return ws.data_root.joinpath(".harnessed", "skill-copies")
        return Path(tempfile.gettempdir()) / "harnessed-skill-copies"


def _roots_inside(ws: Workspace, layers: Sequence[SkillLayer]) -> list[str]:
    """The local ``skill_dirs`` layers that lie inside the workspace, as workspace paths
    (``""``: the workspace itself is a skill folder)."""
    if ws.local_root is None:
        return []
    home = ws.local_root.resolve()
    found: list[str] = []
    for layer in layers:
        local = layer.local_dir("")
        if local is None:
            continue
        folder = local.resolve()
        if folder == home or home in folder.parents:
            rel = folder.relative_to(home).as_posix()
            found.append("" if rel == "." else rel)
    return found


def _layer(label: str, folder: SkillDir, storage_options: dict[str, Any]) -> SkillLayer:
    if isinstance(folder, LocalFilesystem | FsspecFilesystem):
        return SkillLayer(label, folder)
    if isinstance(folder, str) and "://" in folder and not folder.startswith("file://"):
        return SkillLayer(label, FsspecFilesystem(folder, **storage_options))
    if isinstance(folder, str | os.PathLike):
        path = str(folder).removeprefix("file://")
        if not Path(path).is_dir():
            raise ValueError(f"Skills skill_dirs: {path!r} is not a folder")
        return SkillLayer(label, LocalFilesystem(path))
    if isinstance(folder, Filesystem):
        return SkillLayer(label, folder)
    raise TypeError(f"Skills skill_dirs entries must be paths, URLs or filesystems, got {folder!r}")
