"""Finding skills: layers of skill folders, merged by name, rescanned only when files change.

A :class:`SkillLayer` is a folder whose sub-folders are skills (``<root>/<name>/SKILL.md``) on
any :class:`~harnessed.workspace.Filesystem`: a local directory, an fsspec URL, or a folder of
the workspace. :class:`SkillCatalog` keeps what it parsed per layer. A scan lists the layer's
folders and stats each ``SKILL.md`` (a local layer: one directory scan; another filesystem: one
recursive listing); when the (path, size, time) stamps of a layer are those
seen last time, nothing is read or parsed again, and only changed files are re-read when
it is not. Folders whose name starts with ``_`` or ``.`` (``_drafts``) are not skills.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import stat
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harnessed.skills.spec import (
    SKILL_FILE,
    SKILL_FILE_NAMES,
    SkillFormatError,
    SkillMeta,
    parse_skill_md,
)
from harnessed.skills.validate import lower_case_note
from harnessed.workspace import (
    Filesystem,
    LocalFilesystem,
    WorkspaceError,
)
from harnessed.workspace.paths import join

__all__ = ["LayerScan", "Skill", "SkillCatalog", "SkillLayer", "SkillProblem"]

logger = logging.getLogger(__name__)

_KEPT_LAYERS = 1_024

Stamp = tuple[int, float | None, str]
"""(size, modified time, file name) of a skill folder's ``SKILL.md`` (or ``skill.md``)."""


@dataclass(frozen=True, slots=True)
class SkillLayer:
    """A folder of skills on a filesystem; ``label`` says where it came from in listings."""

    label: str
    fs: Filesystem
    root: str = ""
    """Folder of the layer inside ``fs`` (``""``: the filesystem's root)."""

    @property
    def key(self) -> tuple[int, str]:
        return (id(self.fs), self.root)

    def folder(self, name: str) -> str:
        return join(self.root, name) if self.root else name

    def local_dir(self, name: str) -> Path | None:
        """The skill folder on local disk, when the layer is local."""
        if isinstance(self.fs, LocalFilesystem):
            return self.fs.root.joinpath(*self.folder(name).split("/"))
        return None


@dataclass(frozen=True, slots=True)
class Skill:
    """A valid skill: its front matter, its instructions and where it lives."""

    meta: SkillMeta
    body: str
    layer: SkillLayer = field(compare=False)
    revision: str = ""
    """``sha256:`` of the ``SKILL.md`` bytes."""
    file: str = SKILL_FILE
    """The name of the skill's file (``SKILL.md``, or the ``skill.md`` also accepted)."""

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def description(self) -> str:
        return self.meta.description

    @property
    def folder(self) -> str:
        """The skill's folder inside its layer's filesystem."""
        return self.layer.folder(self.name)


@dataclass(frozen=True, slots=True)
class SkillProblem:
    """A folder that looks like a skill but is not valid (skipped, with the rules broken)."""

    layer: str
    folder: str
    problems: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.layer}:{self.folder}: " + "; ".join(self.problems)


@dataclass(frozen=True, slots=True)
class LayerScan:
    """What one layer holds: per folder a valid skill or the problems that skipped it."""

    fingerprint: str
    entries: dict[str, Skill | SkillProblem]
    stamps: dict[str, Stamp] = field(default_factory=dict)

    @property
    def skills(self) -> dict[str, Skill]:
        return {s.name: s for s in self.entries.values() if isinstance(s, Skill)}

    @property
    def problems(self) -> list[SkillProblem]:
        return [p for p in self.entries.values() if isinstance(p, SkillProblem)]


class SkillCatalog:
    """Scans layers and merges them (a later layer wins a name clash). Safe to share."""

    def __init__(self) -> None:
        self._scans: OrderedDict[tuple[int, str], LayerScan] = OrderedDict()
        self._locks: dict[tuple[int, str], asyncio.Lock] = {}
        self.reads = 0
        """How many ``SKILL.md`` files were read and parsed so far (for benchmarks/tests)."""

    async def resolve(
        self, layers: Sequence[SkillLayer]
    ) -> tuple[dict[str, Skill], list[SkillProblem]]:
        """Skills by name over ``layers`` (low → high), and every skipped folder."""
        if all(isinstance(layer.fs, LocalFilesystem) for layer in layers):
            # a local scan is a directory listing (none when the folder is missing): one task
            # per layer would cost more than it saves
            scans = [await self.scan(layer) for layer in layers]
        else:  # object stores: their listings go out at once
            scans = list(await asyncio.gather(*(self.scan(layer) for layer in layers)))
        merged: dict[str, Skill] = {}
        problems: list[SkillProblem] = []
        for scan in scans:
            merged.update(scan.skills)
            problems.extend(scan.problems)
        return dict(sorted(merged.items())), problems

    async def scan(self, layer: SkillLayer) -> LayerScan:
        """The layer's skills, re-reading only ``SKILL.md`` files that changed."""
        lock = self._locks.setdefault(layer.key, asyncio.Lock())
        async with lock:
            previous = self._scans.get(layer.key)
            stamps = await _stamps(layer)
            if previous is not None and previous.stamps == stamps:  # nothing changed
                self._scans.move_to_end(layer.key)
                return previous
            scan = await self._rebuild(layer, stamps, _fingerprint(stamps), previous)
            self._scans[layer.key] = scan
            self._scans.move_to_end(layer.key)
            while len(self._scans) > _KEPT_LAYERS:
                old, _ = self._scans.popitem(last=False)
                self._locks.pop(old, None)
            return scan

    async def _rebuild(
        self,
        layer: SkillLayer,
        stamps: dict[str, Stamp],
        fingerprint: str,
        previous: LayerScan | None,
    ) -> LayerScan:
        old = previous.entries if previous is not None else {}
        old_stamps = previous.stamps if previous is not None else {}
        changed = [d for d, s in stamps.items() if old_stamps.get(d) != s or d not in old]
        loaded = await asyncio.gather(*(self._load(layer, d, stamps[d][2]) for d in changed))
        entries = {d: old[d] for d in stamps if d not in changed}
        for folder, result in zip(changed, loaded, strict=True):
            entries[folder] = result
            if isinstance(result, SkillProblem):
                logger.warning("skipped skill %s", result)
            elif result.meta.notes:
                logger.warning(
                    "skill %s:%s loaded with notes: %s",
                    layer.label,
                    result.folder,
                    "; ".join(result.meta.notes),
                )
        return LayerScan(fingerprint, dict(sorted(entries.items())), stamps)

    async def _load(self, layer: SkillLayer, folder: str, file: str) -> Skill | SkillProblem:
        path = join(layer.folder(folder), file)
        self.reads += 1
        try:
            raw = await layer.fs.read(path)
            meta, body = parse_skill_md(raw.decode("utf-8"), folder, where=path)
        except SkillFormatError as exc:
            return SkillProblem(layer.label, layer.folder(folder), tuple(exc.problems))
        except (WorkspaceError, OSError, UnicodeDecodeError) as exc:
            return SkillProblem(layer.label, layer.folder(folder), (f"cannot read {path}: {exc}",))
        revision = "sha256:" + hashlib.sha256(raw).hexdigest()
        return Skill(lower_case_note(meta, file), body, layer, revision, file)


async def _stamps(layer: SkillLayer) -> dict[str, Stamp]:
    """Folder name → (size, modified) of its ``SKILL.md``, for every skill-like folder."""
    if isinstance(layer.fs, LocalFilesystem):  # one directory scan, no per-path resolving
        base = layer.fs.root.joinpath(*layer.root.split("/")) if layer.root else layer.fs.root
        if not base.is_dir():  # no skills here (the usual user layer): no thread hop either
            return {}
        return await asyncio.to_thread(_local_stamps, base)
    try:  # one recursive listing (on an object store: one paginated request, not N)
        if layer.root and not await layer.fs.exists(layer.root):
            return {}
        listings = [await layer.fs.glob(f"*/{name}", layer.root) for name in SKILL_FILE_NAMES]
    except (WorkspaceError, OSError, ValueError) as exc:
        logger.warning("cannot list skill folder %s:%s (%s)", layer.label, layer.root, exc)
        return {}
    stamps: dict[str, Stamp] = {}
    prefix = f"{layer.root}/" if layer.root else ""
    for name, found in zip(SKILL_FILE_NAMES, listings, strict=True):
        for info in found:
            folder, _, rest = info.path[len(prefix) :].partition("/")
            if rest != name or info.is_dir or folder.startswith(("_", ".")):
                continue  # a case-insensitive store may list SKILL.md for skill.md too
            stamps.setdefault(folder, (info.size, info.modified, name))
    return stamps


def _local_stamps(base: Path) -> dict[str, Stamp]:
    """The stamps of a local layer (reading still goes through the filesystem's checks)."""
    found: dict[str, Stamp] = {}
    try:
        entries = os.scandir(base)
    except OSError:
        return found
    with entries:
        for entry in entries:
            if entry.name.startswith(("_", ".")) or not entry.is_dir():
                continue
            for name in SKILL_FILE_NAMES:
                try:
                    st = os.stat(os.path.join(entry.path, name))
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    found[entry.name] = (st.st_size, st.st_mtime, name)
                    break
    return found


def _fingerprint(stamps: dict[str, Stamp]) -> str:
    digest = hashlib.sha256()
    for folder in sorted(stamps):
        size, modified, name = stamps[folder]
        digest.update(f"{folder}\0{size}\0{modified}\0{name}\n".encode())
    return digest.hexdigest()
