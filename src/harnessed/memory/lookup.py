"""Looking things up in memory: ``memory_search`` and ``memory_get`` over one scope's files.

The files of a scope are its ``MEMORY.md``, the shared workspace ``MEMORY.md`` and the ledgers
under its ``memory/`` directory (archived ones included). A path given to :func:`read_memory`
must name one of them — as shown by a search (workspace-relative) or relative to the memory
home — and may not contain ``..``: nothing else of the workspace can be read this way.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from harnessed.log.search import fold
from harnessed.memory.ledger import Ledger, MemoryPlace
from harnessed.workspace.errors import WorkspaceError
from harnessed.workspace.filesystem import Filesystem
from harnessed.workspace.paths import join

__all__ = ["MemoryMatch", "MemoryPathError", "memory_files", "read_memory", "search_memory"]

_LINE_CHARS = 300
MAX_GET_LINES = 500


class MemoryPathError(ValueError):
    """A path that is not one of the scope's memory files."""


@dataclass(frozen=True, slots=True)
class MemoryMatch:
    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}#{self.line}: {self.text}"


async def memory_files(ledger: Ledger) -> list[str]:
    """The scope's memory files that exist: curated first, then ledgers newest first."""
    files = [p for p in ledger.place.curated_files() if await ledger.fs.exists(p)]
    for archived in (False, True):
        files.extend(path for _, path in reversed(await ledger.ledgers(archived=archived)))
    return files


async def search_memory(
    ledger: Ledger, query: str, *, max_results: int = 20
) -> tuple[list[MemoryMatch], bool]:
    """Lines containing every word of ``query``; when none do, lines with any of them. Words
    are compared as the session search folds them (NFKC, case and accents ignored: ``x2y``
    finds ``x²y``) and found anywhere in a line, so words of any script, CJK included, match
    inside longer text. Returns the matches and whether they are the every-word kind."""
    terms = [t for t in (fold(w) for w in query.split()) if t]
    if not terms:
        raise ValueError("memory_search needs a query with at least one word")
    strict: list[MemoryMatch] = []
    loose: list[MemoryMatch] = []
    for path in await memory_files(ledger):
        text = await ledger.fs.read_text(path)
        for number, line in enumerate(text.splitlines(), 1):
            folded = fold(line)
            found = sum(1 for t in terms if t in folded)
            if not found:
                continue
            shown = line.strip()
            if len(shown) > _LINE_CHARS:
                shown = shown[: _LINE_CHARS - 1] + "…"
            match = MemoryMatch(path, number, shown)
            if found == len(terms):
                strict.append(match)
            elif len(loose) < max_results:
                loose.append(match)
        if len(strict) >= max_results:
            break
    if strict:
        return strict[:max_results], True
    return loose, False


def memory_path_candidates(fs: Filesystem, place: MemoryPlace, path: str) -> list[str]:
    """The memory files ``path`` may name: the workspace path as written first, then the same
    path inside the caller's scope (so ``MEMORY.md`` is the shared file when there is one,
    else the user's own curated memory); raises :class:`MemoryPathError` when it names none."""
    raw = path.strip().replace("\\", "/")
    if not raw:
        raise MemoryPathError("memory_get needs the path of a memory file")
    if ".." in raw.split("/"):
        raise MemoryPathError(f"memory_get does not accept '..' in paths: {path!r}")
    found: list[str] = []
    for candidate in (raw, join(place.home, raw) if place.home else raw):
        try:
            normal = fs.normalize(candidate)
        except (WorkspaceError, ValueError) as exc:
            raise MemoryPathError(str(exc)) from exc
        if place.owns(normal) and normal not in found:
            found.append(normal)
    if found:
        return found
    allowed = ", ".join([*place.curated_files(), f"{place.ledger_dir}/*.md"])
    raise MemoryPathError(
        f"{path!r} is not a memory file; memory_get reads only {allowed} "
        "(use read_file for other workspace files)"
    )


async def read_memory(
    ledger: Ledger, path: str, start_line: int = 1, end_line: int | None = None
) -> str:
    """Lines ``start_line``..``end_line`` (1-based, inclusive) of a memory file, numbered."""
    if start_line < 1:
        raise ValueError(f"start_line must be 1 or more, got {start_line}")
    if end_line is not None and end_line < start_line:
        raise ValueError(f"end_line ({end_line}) must not be before start_line ({start_line})")
    candidates = memory_path_candidates(ledger.fs, ledger.place, path)
    target = candidates[0]
    for candidate in candidates:
        if await ledger.fs.exists(candidate):
            target = candidate
            break
    else:
        raise MemoryPathError(f"{target} does not exist (yet)")
    lines = (await ledger.fs.read_text(target)).splitlines()
    last = len(lines) if end_line is None else min(end_line, len(lines))
    last = min(last, start_line + MAX_GET_LINES - 1)
    if start_line > len(lines):
        return f"{target} has {len(lines)} line(s); nothing at line {start_line}."
    rows = [f"{n:>5}\t{lines[n - 1]}" for n in range(start_line, last + 1)]
    wanted_end = len(lines) if end_line is None else min(end_line, len(lines))
    if last < wanted_end:
        rows.append(
            f"[lines {start_line}-{last} of {len(lines)}; continue with start_line={last + 1}]"
        )
    return f"{posixpath.normpath(target)}:\n" + "\n".join(rows)
