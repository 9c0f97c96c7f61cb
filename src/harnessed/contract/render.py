"""The text inside ``TASK_STATE``: the task contract and the current task list.

By default the task is named with its objective. With ``TaskContractConfig(show_requirements=
True)`` the requirements follow, each with its status (only confirmed ones bind); with
``show_verification=True`` the latest result of each check follows, results for an older subject
version marked STALE, and a line saying whether the task counts as verified — completed todos
never count.
"""

from __future__ import annotations

from harnessed.context.xml import escape
from harnessed.contract.state import TASK, Requirement, TaskContextState, TaskContractConfig
from harnessed.state.agent_state import AgentState
from harnessed.todos.state import TODOS

__all__ = ["task_state_text"]

_DEFAULT = TaskContractConfig()


def task_state_text(state: AgentState, config: TaskContractConfig | None = None) -> str:
    """The body of ``TASK_STATE`` (empty when there is neither a task nor a task list)."""
    config = config or _DEFAULT
    lines: list[str] = []
    task = state.get(TASK)
    if task is not None:
        lines.append(f"task: {escape(task.task_id)} (contract revision {task.revision})")
        lines.append(f"objective: {escape(task.objective)}")
        if config.show_requirements and task.requirements:
            lines.append("requirements (only confirmed ones are binding):")
            lines.extend(_requirement(r) for r in task.requirements)
        if config.show_verification:
            lines.extend(_verification(task))
    todos = state.get(TODOS)
    if todos:
        lines.append("Current task list (replaces any earlier list in the conversation):")
        for item in todos:
            lines.append(f"- [{item.status}] {escape(item.content)} (id: {escape(item.id)})")
    return "\n".join(lines)


def _requirement(r: Requirement) -> str:
    kind = r.kind.replace("_", " ")
    if r.status == "candidate":
        status = "candidate: proposed, not confirmed"
    elif r.status == "rejected":
        status = "rejected" + (f": {r.note}" if r.note else "")
    else:
        status = "confirmed"
    return f"- {escape(r.id)} {kind} [{escape(status)}]: {escape(r.text)}"


def _verification(task: TaskContextState) -> list[str]:
    lines = [f"verification (current subject version: {escape(task.subject_version)}):"]
    results = task.latest_results()
    if not results:
        lines.append("- no checks recorded")
    for r in results:
        target = f" for {escape(r.requirement_id)}" if r.requirement_id else ""
        version = escape(r.subject_version)
        text = f"- {escape(r.check)}{target}: {r.outcome} (subject version {version})"
        if task.is_stale(r):
            text += " STALE: recorded for an older version; it says nothing about the current one"
        if r.details:
            text += f" — {escape(r.details[:300])}"
        lines.append(text)
    missing = task.unverified()
    if missing:
        lines.append("task verified: no — " + escape("; ".join(missing)) + ".")
    else:
        lines.append(f"task verified: yes, for subject version {escape(task.subject_version)}.")
    lines.append("Completed todos do not make the task verified; only current checks do.")
    return lines
