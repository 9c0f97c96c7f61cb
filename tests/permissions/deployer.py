from __future__ import annotations

from typing import Any

from harnessed import tool
from harnessed.models import ScriptedToolCall


class Deployer:
    def __init__(self) -> None:
        self.deployed: list[str] = []

        @tool
        async def deploy(target: str) -> str:
            """Deploy to a target."""
            self.deployed.append(target)
            return f"deployed to {target}"

        @tool(read_only=True)
        async def status() -> str:
            """Read the status."""
            return "green"

        self.tools = [deploy, status]


def call(name: str, id: str | None = None, **args: Any) -> ScriptedToolCall:
    return ScriptedToolCall(name, args, id=id)
