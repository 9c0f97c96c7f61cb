"""What the model reads about sub-agent tasks: tool answers, the reminder, the state block."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harnessed.context.xml import escape
from harnessed.messages import Msg
from harnessed.subagents.records import TaskRecord
from harnessed.subagents.spec import SubagentSpec

__all__ = ["MAX_LISTED", "available_block", "finished_text", "reminder", "started_text"]

MAX_LISTED = 10
"""The most finished tasks one reminder lists (the rest come with the next one)."""
_RESULT_CHARS = 2_000


def _clip(text: str, limit: int = _RESULT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} more characters: call task_output]"


def outcome_line(record: TaskRecord) -> str:
    head = f"- {record.task_id} ({record.agent_key}) {record.status.value}"
    if record.status.value == "COMPLETED":
        return f"{head}:\n{_clip(record.result or '(no text)')}"
    return f"{head}: {record.error or 'no reason given'}"


def reminder(records: Sequence[TaskRecord], more: int) -> Msg:
    """One message telling the model which background tasks finished since it last looked."""
    lines = [
        f"<system-reminder>{len(records) + more} sub-agent task(s) finished in the background "
        "since your last step:"
    ]
    lines += [outcome_line(r) for r in records]
    if more:
        lines.append(
            f"… and {more} more; they follow with your next step, or call task_list / "
            "task_output now."
        )
    lines.append("</system-reminder>")
    return Msg.user("\n".join(lines), metadata={"harness": "subagent_tasks"})


def started_text(record: TaskRecord, *, timed_out: float | None = None) -> str:
    if timed_out is not None:
        why = (
            f"did not finish within {timed_out:g} s, so it goes on in the background "
            f"as task {record.task_id}"
        )
    else:
        why = f"runs in the background as task {record.task_id}"
    return (
        f"Sub-agent {record.agent_key} {why}. Its outcome is given to you when it finishes; "
        f"task_output({record.task_id!r}) shows it earlier, task_cancel stops it."
    )


def finished_text(record: TaskRecord) -> str:
    return (
        f"{record.result or '(the sub-agent gave no text)'}\n\n"
        f"[sub-agent {record.agent_key}, task {record.task_id}; continue this conversation "
        f"with agent_send({record.agent_key!r}, ...)]"
    )


def available_block(specs: Mapping[str, SubagentSpec], running: Sequence[TaskRecord]) -> str:
    lines = ["Sub-agents you can give work to (agent_spawn):"]
    for spec in specs.values():
        if not spec.hidden:
            lines.append(f"- {spec.id}: {escape(spec.description.strip())}")
    if running:
        lines.append("Sub-agent tasks still running:")
        lines += [
            f"- {r.task_id} ({r.agent_key}) since {r.started_at or r.created_at}" for r in running
        ]
    return "\n".join(lines)
