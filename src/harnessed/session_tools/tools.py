"""Built-in session tools: ``session_list``, ``session_history`` and ``session_search``.

They read the append-only session log, never the working history, so they return what really
happened — the full output of a tool result that the context later evicted or pruned, and the
messages a summary replaced. Every call is scoped to the calling user (``ToolContext.user_id``):
the user id never comes from the model, so no argument can reach another user's sessions.

``agent_id`` names whose sessions to read. By default an agent reads only its own; the
application may let it read the sessions of named other agents (a supervisor reading its
workers, say) with ``readable_agents`` — always the same user's sessions, and only those kept
in the same session store (agents sharing a workspace share its default store).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

from harnessed.log.record import RecordType, SessionRecord
from harnessed.messages import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from harnessed.runtime import SessionRef
from harnessed.stores.local.indexed import IndexedSessionLogStore
from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.toolset import Toolset, toolset_tool

__all__ = ["SESSION_TOOL_NAMES", "SessionToolset", "session_tools"]

SESSION_TOOL_NAMES = ("session_list", "session_history", "session_search")
MAX_LISTED = 100
MAX_HISTORY = 200
MAX_HITS = 50
_FULL_HIT_CHARS = 1_000
_SNIPPET_CHARS = 400
_TITLE_CHARS = 80
_AGENT_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def session_tools(
    log: IndexedSessionLogStore, *, readable_agents: Sequence[str] = ()
) -> list[Tool]:
    """The three tools of a :class:`SessionToolset` over ``log``."""
    return SessionToolset(log, readable_agents=readable_agents).tools()


class SessionToolset(Toolset):
    """The three read-only session tools over ``log`` (the agent's session store).

    ``readable_agents`` names the other agents whose sessions (of the calling user) the tools
    may read besides the calling agent's own.
    """

    def __init__(self, log: IndexedSessionLogStore, *, readable_agents: Sequence[str] = ()) -> None:
        self.log = log
        self.others = _agent_names(readable_agents)

    def finish(self, built: Tool) -> Tool:
        if not self.others:  # agent_id could only name this agent: the model need not see it
            return _without(built, "agent_id")
        note = (
            " Besides your own, you may read the sessions of these agents (pass agent_id): "
            + ", ".join(sorted(self.others))
            + "."
        )
        return dataclasses.replace(built, description=built.description + note)

    def agent_of(self, ctx: ToolContext, agent_id: str | None) -> str:
        """The agent whose sessions a call reads (the caller's own unless allowed)."""
        if agent_id is None or agent_id == ctx.agent_name:
            return ctx.agent_name
        if agent_id not in self.others:
            allowed = ", ".join([ctx.agent_name, *sorted(self.others - {ctx.agent_name})])
            raise ToolError(
                f"you may not read the sessions of agent {agent_id!r}; agents you may read: "
                f"{allowed}"
            )
        return agent_id

    @toolset_tool(read_only=True)
    async def session_list(
        self, ctx: ToolContext, limit: int = 20, agent_id: str | None = None
    ) -> str:
        """List your sessions with this agent, newest first: id, last written, how it began.

        Args:
            limit: 1-100.
            agent_id: Another agent whose sessions you may read.
        """
        if not 1 <= limit <= MAX_LISTED:
            raise ToolError(f"limit must be between 1 and {MAX_LISTED}, got {limit}")
        agent = self.agent_of(ctx, agent_id)
        infos = await self.log.sessions(agent, ctx.user_id)
        if not infos:
            whose = "" if agent == ctx.agent_name else f" for agent {agent}"
            return f"There are no recorded sessions{whose} yet."
        whose = "" if agent == ctx.agent_name else f" of agent {agent}"
        lines = [f"{len(infos)} session(s){whose}, newest first:"]
        for info in infos[:limit]:
            key = SessionRef(agent, ctx.user_id, info.session_id)
            first = await self.log.read(key, types=[RecordType.MESSAGE], limit=1)
            title = _one_line(_record_text(first[0]), _TITLE_CHARS) if first else ""
            mine = agent == ctx.agent_name and info.session_id == ctx.session_id
            here = " (this session)" if mine else ""
            when = _when(info.updated_at)
            lines.append(f"- {info.session_id}{here} — last written {when}: {title}")
        if len(infos) > limit:
            lines.append(f"[{len(infos) - limit} older session(s) not shown; raise limit]")
        return "\n".join(lines)

    @toolset_tool(read_only=True)
    async def session_history(
        self,
        ctx: ToolContext,
        session_id: str | None = None,
        last_n: int = 20,
        before_seq: int | None = None,
        agent_id: str | None = None,
    ) -> str:
        """Read a session's messages as logged, each starting with ``#seq``.

        Tool output appears in full even where your context shortened or summarized it.

        Args:
            session_id: Default: this session.
            last_n: How many (1-200), the newest before before_seq.
            before_seq: Page back: only messages before this ``#seq``.
            agent_id: Another agent whose sessions you may read (then session_id is required).
        """
        if not 1 <= last_n <= MAX_HISTORY:
            raise ToolError(f"last_n must be between 1 and {MAX_HISTORY}, got {last_n}")
        if before_seq is not None and before_seq < 1:
            raise ToolError(f"before_seq must be a positive sequence number, got {before_seq}")
        agent = self.agent_of(ctx, agent_id)
        if agent != ctx.agent_name and not session_id:
            raise ToolError(
                f"name the session of agent {agent} to read: session_list(agent_id={agent!r}) "
                "shows them"
            )
        sid = session_id or ctx.session_id
        key = SessionRef(agent, ctx.user_id, sid)
        records = await self.log.read(key, types=[RecordType.MESSAGE])
        if not records:
            whose = "" if agent == ctx.agent_name else f" of agent {agent}"
            raise ToolError(
                f"there is no session {sid!r}{whose} with messages for you; session_list shows "
                "the sessions"
            )
        earlier = [r for r in records if before_seq is None or r.seq < before_seq]
        shown = earlier[-last_n:]
        if not shown:
            return f"Session {sid} has no messages before #{before_seq}."
        header = (
            f"Session {sid}: {len(shown)} of {len(records)} message(s), "
            f"#{shown[0].seq} to #{shown[-1].seq}, as logged:"
        )
        body = [_format_record(r) for r in shown]
        more = len(earlier) - len(shown)
        footer = (
            [f"[{more} earlier message(s): call session_history with before_seq={shown[0].seq}]"]
            if more > 0
            else []
        )
        return "\n\n".join([header, *body, *footer])

    @toolset_tool(read_only=True)
    async def session_search(
        self,
        ctx: ToolContext,
        query: str,
        max_results: int = 10,
        match: Literal["phrase", "all", "any"] = "phrase",
        session_id: str | None = None,
        agent_id: str | None = None,
    ) -> str:
        """Search the messages of your sessions, newest first.

        Whole words (also inside CJK text), ignoring case and accents. A hit ``session#seq`` is
        read in full with session_history(session_id, before_seq=seq+1, last_n=1).

        Args:
            max_results: 1-50.
            match: phrase: the words in order; all: every word; any: one of them.
            session_id: Only this session.
            agent_id: Another agent whose sessions you may read.
        """
        if not 1 <= max_results <= MAX_HITS:
            raise ToolError(f"max_results must be between 1 and {MAX_HITS}, got {max_results}")
        agent = self.agent_of(ctx, agent_id)
        try:
            hits = await self.log.search(
                agent,
                ctx.user_id,
                query,
                max_results=max_results,
                match=match,
                session_id=session_id,
            )
        except (ValueError, TypeError) as exc:
            raise ToolError(str(exc)) from exc
        if not hits:
            scope = f"session {session_id}" if session_id else "your sessions"
            if agent != ctx.agent_name:
                scope += f" with agent {agent}"
            return f"No message in {scope} matches {query!r} (match={match})."
        lines = [f"{len(hits)} match(es) for {query!r}, newest first:"]
        for hit in hits:
            who = f"{hit.role} {hit.name}" if hit.name else hit.role
            text = (
                _one_line(hit.text, _FULL_HIT_CHARS)
                if len(hit.text) <= _FULL_HIT_CHARS
                else hit.snippet(query, _SNIPPET_CHARS)
            )
            lines.append(f"- {hit.session_id}#{hit.seq} [{hit.timestamp[:19]} {who}]: {text}")
        return "\n".join(lines)


def _without(tool: Tool, argument: str) -> Tool:
    """``tool`` with ``argument`` left out of its schema (still accepted when given)."""
    parameters = dict(tool.parameters)
    properties = dict(parameters.get("properties", {}))
    properties.pop(argument, None)
    parameters["properties"] = properties
    return dataclasses.replace(tool, parameters=parameters)


def _agent_names(names: Sequence[str]) -> frozenset[str]:
    if isinstance(names, str):
        raise TypeError("readable_agents must be a sequence of agent names, not one string")
    for name in names:
        if not isinstance(name, str) or not _AGENT_NAME.match(name):
            raise ValueError(
                f"readable_agents: {name!r} is not an agent name (letters, digits, '_', '.', '-')"
            )
    return frozenset(names)


def _when(epoch: float) -> str:
    if epoch <= 0:
        return "at an unknown time"
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _record_text(record: SessionRecord) -> str:
    message = record.message
    return message.text if message is not None else ""


def _format_record(record: SessionRecord) -> str:
    message = record.message
    assert message is not None
    return f"#{record.seq} [{record.timestamp[:19]}] {_format_message(message)}"


def _format_message(message: Msg) -> str:
    if message.role == "tool":
        parts = []
        for result in message.tool_results:
            status = " (error)" if result.is_error else ""
            parts.append(
                f"tool result of {result.name or message.name or 'a tool'} for call "
                f"{result.tool_use_id}{status}:\n{result.content}"
            )
        return "\n".join(parts) or "tool: (empty)"
    lines = [f"{message.role}:"]
    for block in message.content:
        if isinstance(block, TextBlock):
            lines.append(block.text)
        elif isinstance(block, ToolUseBlock):
            arguments = json.dumps(dict(block.input), ensure_ascii=False)
            lines.append(f"→ call {block.name} {arguments} (id {block.id})")
        elif isinstance(block, ToolResultBlock):
            lines.append(block.content)
    return "\n".join(lines)
