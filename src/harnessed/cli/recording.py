"""The last request of a session as the model received it, kept by ``harnessed run`` for
``harnessed inspect --show``.

:class:`RecordingModel` wraps the run's model: before each reasoning request of the run goes out
it writes the request — every message in full and the tool schemas — to
``agents/<agent>/sessions/<user>/<session>.last-request.json`` in the workspace, replacing the
previous one (one file per session, the size of one request). Sub-agents that use the same
model object do not write there: only the requests the run announced (:meth:`expect`, from the
run's own ``model_call_start`` events, which come before their request is sent) are kept.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from harnessed.models.base import Model, ModelEvent, ModelRequest
from harnessed.workspace.layout import Workspace

__all__ = ["RecordingModel", "last_request_path", "request_to_dict"]

_SUFFIX = ".log.jsonl"


def last_request_path(workspace: Workspace, agent: str, user: str, session: str) -> str:
    """Where the session's last request is kept, beside its log."""
    log = workspace.session_log_path(agent, user, session)
    return log[: -len(_SUFFIX)] + ".last-request.json"


def request_to_dict(model: str, request: ModelRequest) -> dict[str, Any]:
    return {
        "model": model,
        "call_id": request.call_id,
        "max_output_tokens": request.max_output_tokens,
        "messages": [m.to_dict() for m in request.messages],
        "tools": [t.to_dict() for t in request.tools],
    }


class RecordingModel:
    """``model`` unchanged, except that each reasoning request is written to ``path`` first.
    Every other attribute (window, discovery, base URL) is the wrapped model's."""

    def __init__(self, model: Model, workspace: Workspace, path: str) -> None:
        self.wrapped = model
        self._workspace = workspace
        self._path = path
        self._expected: set[str] = set()

    def expect(self, model_call_id: str) -> None:
        """The run's next request has this id: record it (others, a sub-agent's, are not)."""
        self._expected.add(model_call_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    @property
    def name(self) -> str:
        return self.wrapped.name

    @property
    def context_window(self) -> int | None:
        return self.wrapped.context_window

    @property
    def max_output_tokens(self) -> int | None:
        return self.wrapped.max_output_tokens

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.purpose == "reasoning" and request.call_id in self._expected:
            self._expected.discard(request.call_id)
            text = json.dumps(request_to_dict(self.name, request), ensure_ascii=False, indent=1)
            await self._workspace.fs.write_text(self._path, text)
        async for event in self.wrapped.stream(request):
            yield event
