"""StateBlock: one piece of the transient ``TASK_STATE`` / ``RUNTIME_STATE`` message.

Capabilities describe their structured state (the task list, plan mode, a sandbox's status …)
as state blocks. Before every reasoning request the compiler asks each capability that has
state blocks for them and renders all of them into one message placed after the conversation:
texts of the same kind are joined (in capability order) into one ``<TASK_STATE>`` or
``<RUNTIME_STATE>`` element. They are shown, never stored in the history, and never summarized.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["StateBlock", "StateBlockKind"]

StateBlockKind: TypeAlias = Literal["TASK_STATE", "RUNTIME_STATE"]


@dataclass(frozen=True, slots=True)
class StateBlock:
    """Text for the ``TASK_STATE`` block (what the task is and how far it got) or the
    ``RUNTIME_STATE`` block (the mode and conditions the agent works under).

    ``text`` is plain text: the renderer does not escape it, so escape anything that came from
    the model or a user with :func:`harnessed.context.render.escape`.
    """

    kind: StateBlockKind
    text: str

    def __post_init__(self) -> None:
        if self.kind not in ("TASK_STATE", "RUNTIME_STATE"):
            raise ValueError(
                f"StateBlock.kind must be 'TASK_STATE' or 'RUNTIME_STATE', got {self.kind!r}"
            )
        if not isinstance(self.text, str):
            raise TypeError(f"StateBlock.text must be a string, got {type(self.text).__name__}")
