"""The task contract: what the agent is asked to achieve and how that is checked.

A :class:`TaskContextState` holds the objective of one task, its requirements (constraints and
acceptance criteria) and the verification results recorded against it. It is immutable: every
change returns a new state with ``revision`` one higher, and a change made with an
``expected_revision`` that is no longer current is refused with
:class:`TaskRevisionConflictError`, so two writers can never silently overwrite each other.

Trust is explicit. Requirements proposed by the model stay *candidates* until application code
confirms or rejects them. Verification results are bound to the *subject version* (the version
of whatever is being checked: a commit, a document revision, a build number) current when the
check started; once the application moves the subject to a new version, older results are
*stale* and say nothing about the current subject. Completed todos never make a task verified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias, get_args

from harnessed._internal.clock import now_iso
from harnessed.state.sections import StateSection

__all__ = [
    "REQUIREMENT_KINDS",
    "TASK",
    "VERIFICATION_OUTCOMES",
    "Requirement",
    "RequirementKind",
    "RequirementSource",
    "RequirementStatus",
    "TaskContextState",
    "TaskContractConfig",
    "TaskRevisionConflictError",
    "VerificationOutcome",
    "VerificationResult",
]

RequirementKind: TypeAlias = Literal["constraint", "acceptance_criterion"]
RequirementStatus: TypeAlias = Literal["candidate", "confirmed", "rejected"]
RequirementSource: TypeAlias = Literal["model", "application"]
VerificationOutcome: TypeAlias = Literal["passed", "failed", "unknown", "error"]

REQUIREMENT_KINDS: tuple[str, ...] = get_args(RequirementKind)
VERIFICATION_OUTCOMES: tuple[str, ...] = get_args(VerificationOutcome)
_STATUSES: tuple[str, ...] = get_args(RequirementStatus)
_SOURCES: tuple[str, ...] = get_args(RequirementSource)


class TaskRevisionConflictError(RuntimeError):
    """A change was based on a task revision that is no longer current (nothing changed)."""

    def __init__(self, expected: int, current: int) -> None:
        self.expected = expected
        self.current = current
        super().__init__(
            f"the task contract is at revision {current}, not the expected revision {expected}; "
            "nothing was changed. Read the task again and retry"
        )


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be non-blank text, got {value!r}")
    return value.strip()


def _choice(value: object, allowed: tuple[str, ...], name: str) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")


@dataclass(frozen=True, slots=True)
class TaskContractConfig:
    """How an agent shows and extends the task contract.

    Showing the contract is opt-in: by default ``TASK_STATE`` names the task and its objective
    only. Allowing proposals turns showing the requirements on, because the model must see its
    candidates and whether they were confirmed or rejected; asking for proposals while
    explicitly hiding the requirements is refused at construction.
    """

    show_requirements: bool | None = None
    """Show the requirements (confirmed, candidate and rejected) in ``TASK_STATE``. ``None``
    (the default) follows ``allow_requirement_proposals``; after construction it is a bool."""
    show_verification: bool = False
    """Show the latest verification results, marking results for an older subject version as
    STALE, and whether the task counts as verified."""
    allow_requirement_proposals: bool = False
    """Give the model the ``task_requirement_propose`` tool. Proposals stay candidates until
    application code confirms them. Implies ``show_requirements``."""

    def __post_init__(self) -> None:
        for name in ("show_verification", "allow_requirement_proposals"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"TaskContractConfig.{name} must be a bool")
        show = self.show_requirements
        if show is None:
            object.__setattr__(self, "show_requirements", self.allow_requirement_proposals)
        elif not isinstance(show, bool):
            raise ValueError("TaskContractConfig.show_requirements must be a bool or None")
        elif self.allow_requirement_proposals and not show:
            raise ValueError(
                "TaskContractConfig.show_requirements=False cannot be combined with "
                "allow_requirement_proposals=True: the model would propose requirements without "
                "ever seeing them or whether they were confirmed or rejected. Leave "
                "show_requirements unset (or True) when proposals are allowed"
            )


@dataclass(frozen=True, slots=True)
class Requirement:
    """One constraint or acceptance criterion of a task."""

    id: str
    kind: RequirementKind
    text: str
    status: RequirementStatus = "candidate"
    source: RequirementSource = "model"
    note: str | None = None
    """Why it was rejected (or a note given when it was confirmed)."""

    def __post_init__(self) -> None:
        _text(self.id, "requirement id")
        _choice(self.kind, REQUIREMENT_KINDS, "requirement kind")
        _text(self.text, "requirement text")
        _choice(self.status, _STATUSES, "requirement status")
        _choice(self.source, _SOURCES, "requirement source")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "text": self.text,
            "status": self.status,
            "source": self.source,
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Requirement:
        return cls(
            id=str(data["id"]),
            kind=data["kind"],
            text=data["text"],
            status=data.get("status", "candidate"),
            source=data.get("source", "model"),
            note=data.get("note"),
        )


@dataclass(frozen=True, slots=True)
class VerificationResult:
    """The outcome of one check, bound to the subject version it was run against."""

    id: str
    check: str
    outcome: VerificationOutcome
    subject_version: str
    requirement_id: str | None = None
    details: str = ""
    recorded_at: str = field(default_factory=now_iso)

    def __post_init__(self) -> None:
        _text(self.id, "verification id")
        _text(self.check, "verification check")
        _choice(self.outcome, VERIFICATION_OUTCOMES, "verification outcome")
        _text(self.subject_version, "subject_version")
        if not isinstance(self.details, str):
            raise ValueError("verification details must be text")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "check": self.check,
            "outcome": self.outcome,
            "subject_version": self.subject_version,
            "requirement_id": self.requirement_id,
            "details": self.details,
            "recorded_at": self.recorded_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VerificationResult:
        return cls(
            id=str(data["id"]),
            check=data["check"],
            outcome=data["outcome"],
            subject_version=str(data["subject_version"]),
            requirement_id=data.get("requirement_id"),
            details=data.get("details", ""),
            recorded_at=data.get("recorded_at") or now_iso(),
        )


@dataclass(frozen=True, slots=True)
class TaskContextState:
    """The task contract of a session (immutable; changes return a new revision)."""

    task_id: str
    objective: str
    revision: int = 1
    subject_version: str = "1"
    requirements: tuple[Requirement, ...] = ()
    verifications: tuple[VerificationResult, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Application data kept with the task (JSON-compatible); never shown to the model."""

    def __post_init__(self) -> None:
        _text(self.task_id, "task_id")
        _text(self.objective, "objective")
        _text(self.subject_version, "subject_version")
        if not isinstance(self.revision, int) or self.revision < 1:
            raise ValueError(f"task revision must be a positive integer, got {self.revision!r}")
        ids = [r.id for r in self.requirements]
        if len(ids) != len(set(ids)):
            raise ValueError(f"requirement ids must be unique, got {ids}")

    # ---------------------------------------------------------------- begin
    @classmethod
    def begin(
        cls,
        task_id: str,
        objective: str,
        *,
        subject_version: str | int = "1",
        previous: TaskContextState | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> TaskContextState:
        """A new task. Replacing ``previous`` continues its revision count."""
        return cls(
            task_id=_text(task_id, "task_id"),
            objective=_text(objective, "objective"),
            revision=previous.revision + 1 if previous is not None else 1,
            subject_version=_text(str(subject_version), "subject_version"),
            metadata=dict(metadata or {}),
        )

    # -------------------------------------------------------------- changes
    def _expect(self, expected_revision: int | None) -> None:
        if expected_revision is not None and expected_revision != self.revision:
            raise TaskRevisionConflictError(expected_revision, self.revision)

    def _next(self, **changes: Any) -> TaskContextState:
        return replace(self, revision=self.revision + 1, **changes)

    def requirement(self, requirement_id: str) -> Requirement:
        for r in self.requirements:
            if r.id == requirement_id:
                return r
        known = ", ".join(r.id for r in self.requirements) or "none"
        raise KeyError(
            f"task {self.task_id!r} has no requirement {requirement_id!r} (requirements: {known})"
        )

    def add_requirement(
        self,
        kind: RequirementKind,
        text: str,
        *,
        source: RequirementSource = "application",
        expected_revision: int | None = None,
    ) -> TaskContextState:
        """Add a requirement: confirmed when the application adds it, a candidate from the model."""
        self._expect(expected_revision)
        clean = _text(text, "requirement text")
        for r in self.requirements:
            if r.status != "rejected" and r.kind == kind and r.text.casefold() == clean.casefold():
                raise ValueError(f"requirement {r.id} already says this ({r.status})")
        new = Requirement(
            id=f"r{len(self.requirements) + 1}",
            kind=kind,
            text=clean,
            status="confirmed" if source == "application" else "candidate",
            source=source,
        )
        return self._next(requirements=(*self.requirements, new))

    def confirm(
        self, requirement_id: str, *, note: str | None = None, expected_revision: int | None = None
    ) -> TaskContextState:
        """Make a candidate (or a rejected) requirement binding."""
        return self._decide(requirement_id, "confirmed", note, expected_revision)

    def reject(
        self, requirement_id: str, *, note: str | None = None, expected_revision: int | None = None
    ) -> TaskContextState:
        """Set a requirement aside; ``note`` tells the model why."""
        return self._decide(requirement_id, "rejected", note, expected_revision)

    def _decide(
        self,
        requirement_id: str,
        status: RequirementStatus,
        note: str | None,
        expected_revision: int | None,
    ) -> TaskContextState:
        self._expect(expected_revision)
        current = self.requirement(requirement_id)
        if current.status == status:
            raise ValueError(f"requirement {requirement_id} is already {status}")
        changed = replace(current, status=status, note=note)
        requirements = tuple(changed if r.id == requirement_id else r for r in self.requirements)
        return self._next(requirements=requirements)

    def with_subject_version(
        self, version: str | int, *, expected_revision: int | None = None
    ) -> TaskContextState:
        """The subject changed: results for older versions become stale."""
        self._expect(expected_revision)
        clean = _text(str(version), "subject_version")
        if clean == self.subject_version:
            raise ValueError(f"the subject is already at version {clean!r}")
        return self._next(subject_version=clean)

    def record(
        self,
        check: str,
        outcome: VerificationOutcome,
        *,
        subject_version: str | int | None = None,
        requirement_id: str | None = None,
        details: str = "",
        expected_revision: int | None = None,
    ) -> TaskContextState:
        """Record a verification result, bound to ``subject_version`` (default: the current)."""
        self._expect(expected_revision)
        if requirement_id is not None:
            target = self.requirement(requirement_id)
            if target.status == "rejected":
                raise ValueError(f"requirement {requirement_id} was rejected; nothing to verify")
        version = self.subject_version if subject_version is None else str(subject_version)
        result = VerificationResult(
            id=f"v{len(self.verifications) + 1}",
            check=_text(check, "verification check"),
            outcome=outcome,
            subject_version=version,
            requirement_id=requirement_id,
            details=details,
        )
        return self._next(verifications=(*self.verifications, result))

    # ---------------------------------------------------------------- views
    def is_stale(self, result: VerificationResult) -> bool:
        """Whether ``result`` was recorded for another subject version than the current one."""
        return result.subject_version != self.subject_version

    def latest_results(self) -> list[VerificationResult]:
        """The newest result of each (check, requirement), in first-recorded order."""
        latest: dict[tuple[str, str | None], VerificationResult] = {}
        for result in self.verifications:
            latest[(result.check, result.requirement_id)] = result
        return list(latest.values())

    def unverified(self) -> list[str]:
        """Why the task does not count as verified for the current subject (empty: verified).

        Verified means: at least one current (non-stale) result, every current latest result
        passed, and every confirmed acceptance criterion has a current passing result.
        """
        current = [r for r in self.latest_results() if not self.is_stale(r)]
        reasons: list[str] = []
        if not current:
            reasons.append(f"no check has been recorded for subject version {self.subject_version}")
        failing = [f"{r.check} {r.outcome}" for r in current if r.outcome != "passed"]
        if failing:
            reasons.append("not passing: " + ", ".join(failing))
        passed_for = {r.requirement_id for r in current if r.outcome == "passed"}
        missing = [
            r.id
            for r in self.requirements
            if r.kind == "acceptance_criterion"
            and r.status == "confirmed"
            and r.id not in passed_for
        ]
        if missing:
            reasons.append("no current passing check for " + ", ".join(missing))
        return reasons

    # -------------------------------------------------------- serialization
    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "objective": self.objective,
            "revision": self.revision,
            "subject_version": self.subject_version,
            "requirements": [r.to_dict() for r in self.requirements],
            "verifications": [v.to_dict() for v in self.verifications],
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskContextState:
        """Rebuild a task from :meth:`to_dict` output.

        Data written before the contract was typed (a free-form mapping with an ``objective``
        and, optionally, ``requirements`` as plain strings) is converted: the strings become
        confirmed constraints and unknown keys are kept in ``metadata``.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"task data must be a mapping, got {type(data).__name__}")
        if "task_id" not in data:
            return cls._from_legacy(data)
        try:
            return cls(
                task_id=data["task_id"],
                objective=data["objective"],
                revision=int(data.get("revision", 1)),
                subject_version=str(data.get("subject_version", "1")),
                requirements=tuple(Requirement.from_dict(r) for r in data.get("requirements", ())),
                verifications=tuple(
                    VerificationResult.from_dict(v) for v in data.get("verifications", ())
                ),
                metadata=dict(data.get("metadata") or {}),
            )
        except KeyError as exc:
            raise ValueError(f"task data is missing field {exc.args[0]!r}") from None

    @classmethod
    def _from_legacy(cls, data: Mapping[str, Any]) -> TaskContextState:
        objective = data.get("objective")
        if not isinstance(objective, str) or not objective.strip():
            raise ValueError("task data has neither a task_id nor a non-blank objective")
        raw = data.get("requirements") or ()
        texts: Sequence[Any] = raw if isinstance(raw, list | tuple) else [raw]
        requirements = tuple(
            Requirement(f"r{i}", "constraint", str(t), "confirmed", "application")
            for i, t in enumerate(texts, start=1)
            if str(t).strip()
        )
        extra = {k: v for k, v in data.items() if k not in ("objective", "requirements")}
        return cls("task", objective, requirements=requirements, metadata=extra)


def _decode_task(data: Any) -> TaskContextState | None:
    """The stored contract. Free-form task data from before the contract was typed, with no
    objective to read, gives ``None`` (its data stays in the section until a task is set)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"the task section must be a JSON object, got {type(data).__name__}")
    if "task_id" in data:
        return TaskContextState.from_dict(data)
    try:
        return TaskContextState.from_dict(data)
    except ValueError:
        return None


def _encode_task(task: TaskContextState | None) -> dict[str, Any] | None:
    return task.to_dict() if task is not None else None


TASK: StateSection[TaskContextState | None] = StateSection(
    "task", decode=_decode_task, encode=_encode_task, default=lambda: None
)
"""The session's task contract (``None``: no task)."""
