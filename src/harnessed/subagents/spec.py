"""Sub-agent declarations: what an agent may delegate to, and how each one is built.

Three ways to declare one:

* ``SubagentSpec(id=..., description=..., system_prompt=..., ...)`` in code;
* a workspace file ``subagents/<id>.md``: YAML front matter (``description`` required;
  ``model``, ``tools``, ``max_iters``, ``workspace``, ``hidden`` optional) and a body that is
  the sub-agent's system prompt (:func:`parse_spec_file`);
* any :class:`~harnessed.HarnessAgent` (it runs as it is, with its own model and tools).

The built-in ``general-purpose`` sub-agent uses the parent's model and tools and shares its
workspace (:data:`GENERAL_PURPOSE`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

from harnessed.models.base import Model

if TYPE_CHECKING:
    from harnessed.subagents.delegate import Delegate

__all__ = [
    "GENERAL_PURPOSE",
    "SpecError",
    "SubagentSpec",
    "WorkspaceMode",
    "parse_spec_file",
]

WorkspaceMode: TypeAlias = Literal["shared", "isolated"]
ApprovalPolicy: TypeAlias = Literal["forward", "deny", "fail"]
_WORKSPACE_MODES: tuple[str, ...] = get_args(WorkspaceMode)
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_FIELDS = frozenset(
    {"description", "model", "tools", "max_iters", "workspace", "hidden", "on_approval"}
)
_MAX_ITERS_LIMIT = 200


class SpecError(ValueError):
    """A sub-agent declaration that cannot be used (the message names the problem)."""


@dataclass(frozen=True, slots=True)
class SubagentSpec:
    """A sub-agent the model may spawn.

    Validated at construction: a wrong value raises :class:`SpecError` naming the field.
    """

    id: str
    """The name the model spawns it by: lowercase letters, digits, ``_`` or ``-``."""
    description: str
    """When to use it (shown to the parent model)."""
    system_prompt: str = ""
    """The sub-agent's instructions (its role, how to report back)."""
    model: Model | str | None = None
    """Its model (a :class:`Model` or a string such as ``"openai:gpt-4.1-mini"``);
    ``None``: the parent's."""
    tools: tuple[str, ...] | None = None
    """The parent's tools it may use (an allowlist, by name); ``None``: all of them. A name the
    parent does not have makes a spawn fail with an error result naming it."""
    max_iters: int | None = None
    """The most model requests per task; ``None``: the parent's ``max_iters``."""
    workspace: WorkspaceMode = "shared"
    """``shared``: the parent's workspace; ``isolated``: a private scratch workspace per
    sub-agent session (file and shell tools work there; the parent's files are not reachable)."""
    hidden: bool = False
    on_approval: ApprovalPolicy = "forward"
    """What happens when one of its tool calls needs approval, or it asks the user a question:
    ``forward`` shows the request in the parent's stream (tagged with the sub-agent's path),
    where the parent's ``respond`` answers it — when nobody can answer (the parent runs with
    ``call``, which parks instead of waiting) the task fails; ``deny`` declines it at once;
    ``fail`` ends the task as failed."""
    output_type: Any = field(default=None, compare=False)
    """The type of its final answer (as ``HarnessAgent(output_type=...)``): the task's result
    is then the validated value as JSON (``TaskRecord.output``); ``None``: free text."""
    """Left out of the list shown to the model (it can still be spawned by id)."""
    source: str = "code"
    """Where it was declared (``code``, ``built-in``, ``agent`` or the workspace file)."""
    agent: Delegate | None = field(default=None, compare=False, repr=False)
    """An existing agent that runs the tasks as it is (its own model, tools and prompt; the
    fields above other than ``id``, ``description`` and ``hidden`` are then unused)."""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise SpecError(
                f"sub-agent id {self.id!r} is invalid: use 1-64 lowercase letters, digits, "
                "'_' or '-', starting with a letter or digit"
            )
        if not isinstance(self.description, str) or not self.description.strip():
            raise SpecError(f"sub-agent {self.id!r}: description must be non-blank text")
        if not isinstance(self.system_prompt, str):
            raise SpecError(f"sub-agent {self.id!r}: system_prompt must be text")
        if self.model is not None and not isinstance(self.model, str | Model):
            raise SpecError(f"sub-agent {self.id!r}: model must be a Model or a model string")
        if isinstance(self.model, str) and not self.model.strip():
            raise SpecError(f"sub-agent {self.id!r}: model must not be blank")
        if self.tools is not None:
            if isinstance(self.tools, str) or not all(isinstance(t, str) and t for t in self.tools):
                raise SpecError(f"sub-agent {self.id!r}: tools must be a list of tool names")
            object.__setattr__(self, "tools", tuple(self.tools))
        if self.max_iters is not None and (
            isinstance(self.max_iters, bool)
            or not isinstance(self.max_iters, int)
            or not 1 <= self.max_iters <= _MAX_ITERS_LIMIT
        ):
            raise SpecError(
                f"sub-agent {self.id!r}: max_iters must be a whole number from 1 to "
                f"{_MAX_ITERS_LIMIT}, got {self.max_iters!r}"
            )
        if self.workspace not in _WORKSPACE_MODES:
            raise SpecError(
                f"sub-agent {self.id!r}: workspace must be 'shared' or 'isolated', got "
                f"{self.workspace!r}"
            )
        if not isinstance(self.hidden, bool):
            raise SpecError(f"sub-agent {self.id!r}: hidden must be true or false")
        if self.on_approval not in ("forward", "deny", "fail"):
            raise SpecError(
                f"sub-agent {self.id!r}: on_approval must be 'forward', 'deny' or 'fail', got "
                f"{self.on_approval!r}"
            )
        if self.output_type is not None:
            from harnessed.output.spec import OutputSpec

            try:
                OutputSpec(self.output_type)
            except TypeError as exc:
                raise SpecError(f"sub-agent {self.id!r}: output_type: {exc}") from None


GENERAL_PURPOSE = SubagentSpec(
    id="general-purpose",
    description=(
        "A helper with your own model and tools, working in the same workspace. Give it a "
        "self-contained piece of work (research, a change, a check) and it reports back."
    ),
    system_prompt=(
        "You are a sub-agent: another agent gave you one task. Work on it with the tools you "
        "have, then answer with a short report of what you did and found; your final answer "
        "is all the other agent will see."
    ),
    source="built-in",
)
"""The built-in sub-agent: the parent's model and tools, the shared workspace."""


def parse_spec_file(subagent_id: str, text: str, *, source: str = "") -> SubagentSpec:
    """Read a ``subagents/<id>.md`` file: YAML front matter between ``---`` lines, then the
    system prompt. Raises :class:`SpecError` naming the problem."""
    where = source or f"subagents/{subagent_id}.md"
    body = text.lstrip("\ufeff")
    lines = body.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SpecError(f"{where}: must start with a '---' line opening the YAML front matter")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise SpecError(f"{where}: the front matter has no closing '---' line")
    import yaml  # only when a spec file is read: `import harnessed` stays light

    try:
        meta = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise SpecError(f"{where}: the front matter is not valid YAML ({exc})") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise SpecError(f"{where}: the front matter must be a mapping of fields")
    unknown = sorted(str(k) for k in meta if k not in _FIELDS)
    if unknown:
        raise SpecError(
            f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_FIELDS))}"
        )
    if "description" not in meta:
        raise SpecError(f"{where}: the required field 'description' is missing")
    tools = meta.get("tools")
    if isinstance(tools, str):  # "read_file, grep_files" is a natural way to write it
        tools = [t.strip() for t in tools.split(",") if t.strip()]
    prompt = "".join(lines[end + 1 :]).strip()
    try:
        return SubagentSpec(
            id=subagent_id,
            description=_text(meta["description"], where, "description"),
            system_prompt=prompt,
            model=_text(meta["model"], where, "model") if meta.get("model") is not None else None,
            tools=tuple(tools) if isinstance(tools, list) else tools,
            max_iters=meta.get("max_iters"),
            workspace=meta.get("workspace", "shared"),
            hidden=meta.get("hidden", False),
            on_approval=meta.get("on_approval", "forward"),
            source=where,
        )
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _text(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str):
        raise SpecError(f"{where}: {name} must be text, got {type(value).__name__}")
    return value
