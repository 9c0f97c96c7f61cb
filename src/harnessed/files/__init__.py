"""File tools as a capability: read, list, search and edit the agent's workspace."""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.capabilities.base import Capability, CapabilityHost
from harnessed.capabilities.queries import SkillFolders
from harnessed.files.tools import file_tools
from harnessed.tools.base import Tool

__all__ = ["FileTools", "model_editable_instructions"]


def model_editable_instructions(host: CapabilityHost) -> tuple[str, ...]:
    """The instruction paths the application lets the model change: ``skills`` with
    ``Skills(model_edits_skills=True)``, else none (the model's view keeps them read-only)."""
    skills = host.query(SkillFolders)
    return ("skills",) if skills is not None and skills.model_may_edit else ()


class FileTools(Capability):
    """The built-in file tools over the agent's workspace (on by default with a workspace)."""

    name = "file_tools"

    def __init__(self) -> None:
        self._tools: list[Tool] = []

    def setup(self, host: CapabilityHost) -> None:
        if host.workspace is None:
            raise ValueError("FileTools needs a workspace: pass workspace=... to HarnessAgent")
        self._tools = file_tools(
            host.workspace, writable_instructions=model_editable_instructions(host)
        )

    def tools(self) -> Sequence[Tool]:
        return self._tools
