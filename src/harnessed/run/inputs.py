"""What an agent call accepts as input, and its validation."""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.messages import Msg, TextBlock

__all__ = ["AgentInput", "input_messages"]

AgentInput = str | Msg | Sequence[Msg] | None


def input_messages(input: AgentInput) -> list[Msg]:
    """The messages of ``input``; raises naming the problem for blank or misplaced input."""
    if input is None:
        return []
    if isinstance(input, str):
        if not input.strip():
            raise ValueError("agent input must not be blank")
        return [Msg.user(input)]
    messages = [input] if isinstance(input, Msg) else list(input)
    for m in messages:
        if not isinstance(m, Msg):
            raise TypeError(f"agent input must be a str, a Msg or a list of Msg, got {m!r}")
        if m.role == "system":
            raise ValueError(
                "agent input must not be a system message: instructions belong in sys_prompt, "
                "instructions= or add_instruction() (the request has one system message)"
            )
        if not m.content or (
            m.role == "user"
            and not m.text.strip()
            and all(isinstance(b, TextBlock) for b in m.content)
        ):
            raise ValueError(f"agent input message {m.id} is blank")
    return messages
