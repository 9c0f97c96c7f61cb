"""Dynamic context sources: business facts loaded before every reasoning request.

A source returns a list of :class:`ContextBlock`: ``ContextBlock.runtime`` for current facts
(an approval state, a remaining quota) and ``ContextBlock.reference`` for documents and
retrieved passages. An empty list means "nothing relevant"; ``None`` is a failure. Sources never
create system instructions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import hashlib
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from harnessed.models.base import Purpose

__all__ = [
    "ContextBlock",
    "ContextRequest",
    "ContextSource",
    "ContextSourceError",
    "SourceFailurePolicy",
    "SourceRegistration",
    "SourceResultError",
    "SourceSet",
    "validate_id",
]

logger = logging.getLogger(__name__)

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def validate_id(value: object, what: str) -> str:
    """Check an id against ``[A-Za-z0-9][A-Za-z0-9_.-]*`` and return it."""
    if not isinstance(value, str) or not _ID.match(value):
        raise ValueError(
            f"{what} {value!r} is invalid: use letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return value


def content_revision(text: str) -> str:
    """The default revision of a material: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _check_revision(revision: object, block_id: str) -> str:
    if not isinstance(revision, str) or not revision.strip():
        raise ValueError(
            f"context block {block_id!r} revision must be non-blank text, got {revision!r}"
        )
    return revision


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """One piece of material from a source. Build with :meth:`runtime` or :meth:`reference`."""

    id: str
    text: str
    placement: Literal["runtime", "reference"]
    revision: str | None = None
    priority: int = 0
    is_required: bool = False

    def __post_init__(self) -> None:
        validate_id(self.id, "context block id")
        if not isinstance(self.text, str):
            raise TypeError(f"context block {self.id!r} text must be a string")
        if self.placement not in ("runtime", "reference"):
            raise ValueError(
                f"context block placement must be runtime or reference: {self.placement!r}"
            )
        if self.revision is not None:
            _check_revision(self.revision, self.id)
        if not isinstance(self.priority, int) or isinstance(self.priority, bool):
            raise TypeError(f"context block {self.id!r} priority must be an int")

    @classmethod
    def runtime(cls, id: str, text: str) -> ContextBlock:
        """Current facts the model should act on (shown as runtime state)."""
        return cls(id, text, "runtime")

    @classmethod
    def reference(cls, id: str, text: str) -> ContextBlock:
        """Documents and retrieved passages (shown as source material, not authority)."""
        return cls(id, text, "reference")

    def with_revision(self, revision: str) -> ContextBlock:
        """A copy with an explicit revision (non-blank text) instead of the content hash."""
        return dataclasses.replace(self, revision=_check_revision(revision, self.id))

    def with_priority(self, priority: int) -> ContextBlock:
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError("priority must be an int")
        return dataclasses.replace(self, priority=priority)

    def required(self) -> ContextBlock:
        """A copy that must be kept when fitting the budget."""
        return dataclasses.replace(self, is_required=True)

    @property
    def effective_revision(self) -> str:
        return self.revision or content_revision(self.text)


@dataclass(frozen=True, slots=True)
class ContextRequest:
    """What a source is told about the request it loads for."""

    agent_id: str
    user_id: str
    session_id: str
    call_id: str
    purpose: Purpose = "reasoning"
    extras: Mapping[str, Any] = field(default_factory=dict)
    """The call's ``RuntimeContext.extras`` (application data, e.g. a tenant id)."""


@runtime_checkable
class ContextSource(Protocol):
    """Loads blocks for one request. Must be read-only and safe to call repeatedly."""

    async def load(self, request: ContextRequest) -> list[ContextBlock]: ...


SourceFunction: TypeAlias = Callable[[ContextRequest], Awaitable[Sequence[ContextBlock] | None]]


class SourceFailurePolicy(enum.Enum):
    """What a failing source does to request preparation."""

    FAIL = "fail"
    """Stop preparing: the call raises (the default)."""
    OMIT = "omit"
    """Skip the source for this request and record ``source_unavailable`` in the manifest."""


class ContextSourceError(RuntimeError):
    """A source failed under ``FAIL``, or returned structurally invalid output (any policy)."""


class SourceResultError(Exception):
    """A source returned ``None`` instead of a list of blocks."""


@dataclass(frozen=True, slots=True)
class SourceRegistration:
    id: str
    source: ContextSource | SourceFunction
    timeout: float = 5.0
    on_failure: SourceFailurePolicy = SourceFailurePolicy.FAIL

    async def call(self, request: ContextRequest) -> Any:
        if isinstance(self.source, ContextSource):
            return await self.source.load(request)
        result = self.source(request)
        if inspect.isawaitable(result):
            return await result
        return result


@dataclass(frozen=True, slots=True)
class SourceOutcome:
    """The blocks of one source, or the class name of its failure under ``OMIT``."""

    source_id: str
    blocks: tuple[ContextBlock, ...] = ()
    unavailable: str | None = None


class SourceSet:
    """The registered sources of an agent, in registration order."""

    def __init__(self) -> None:
        self._sources: dict[str, SourceRegistration] = {}

    def add(
        self,
        source_id: str,
        source: ContextSource | SourceFunction,
        *,
        timeout: float = 5.0,
        on_failure: SourceFailurePolicy = SourceFailurePolicy.FAIL,
    ) -> None:
        """Register a source. Nothing is loaded here; sources load when requests are prepared."""
        validate_id(source_id, "context source id")
        if source_id in self._sources:
            raise ValueError(f"a context source with id {source_id!r} is already registered")
        if not (isinstance(source, ContextSource) or callable(source)):
            raise TypeError(f"context source {source_id!r} must have load() or be callable")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ValueError(f"context source {source_id!r}: timeout must be > 0, got {timeout!r}")
        if not isinstance(on_failure, SourceFailurePolicy):
            raise TypeError(
                f"context source {source_id!r}: on_failure must be a SourceFailurePolicy"
            )
        self._sources[source_id] = SourceRegistration(source_id, source, float(timeout), on_failure)

    def __len__(self) -> int:
        return len(self._sources)

    @property
    def ids(self) -> list[str]:
        return list(self._sources)

    async def load_all(self, request: ContextRequest) -> list[SourceOutcome]:
        """Load every source concurrently, each under its own timeout; keep registration order."""
        if not self._sources:
            return []
        tasks = [asyncio.ensure_future(self._load_one(r, request)) for r in self._sources.values()]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:  # one source failed: stop the others before raising
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _load_one(self, reg: SourceRegistration, request: ContextRequest) -> SourceOutcome:
        try:
            result = await asyncio.wait_for(reg.call(request), timeout=reg.timeout)
            if result is None:
                raise SourceResultError(
                    f"context source {reg.id!r} returned None; return an empty list for "
                    "'nothing relevant'"
                )
        except asyncio.CancelledError:
            raise
        except TimeoutError as exc:  # asyncio.wait_for's has no message: say what happened
            if str(exc):
                return self._failed(reg, exc)
            if reg.on_failure is SourceFailurePolicy.FAIL:
                raise ContextSourceError(
                    f"context source {reg.id!r} did not answer within its timeout of "
                    f"{reg.timeout:g} s (raise it with add_context_source(..., timeout=...))"
                ) from exc
            logger.warning("context source %r timed out after %g s", reg.id, reg.timeout)
            return SourceOutcome(reg.id, unavailable="TimeoutError")
        except Exception as exc:
            return self._failed(reg, exc)
        return SourceOutcome(reg.id, _check_blocks(reg, result))

    @staticmethod
    def _failed(reg: SourceRegistration, exc: Exception) -> SourceOutcome:
        if reg.on_failure is SourceFailurePolicy.FAIL:
            raise ContextSourceError(
                f"context source {reg.id!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
        return SourceOutcome(reg.id, unavailable=type(exc).__name__)


def _check_blocks(reg: SourceRegistration, result: object) -> tuple[ContextBlock, ...]:
    """Structural checks, raised under any policy."""
    if not isinstance(result, list | tuple):
        raise ContextSourceError(
            f"context source {reg.id!r} must return a list of ContextBlock, got "
            f"{type(result).__name__}"
        )
    seen: set[str] = set()
    for item in result:
        if not isinstance(item, ContextBlock):
            raise ContextSourceError(
                f"context source {reg.id!r} returned a non-block item: {type(item).__name__}"
            )
        if item.id in seen:
            raise ContextSourceError(
                f"context source {reg.id!r} returned block id {item.id!r} twice"
            )
        seen.add(item.id)
        if item.is_required and reg.on_failure is SourceFailurePolicy.OMIT:
            raise ContextSourceError(
                f"context source {reg.id!r} uses OMIT but returned required block {item.id!r}; "
                "a source whose blocks are required must use FAIL"
            )
    return tuple(result)
