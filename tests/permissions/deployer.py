"""The deployment tools the permissions tests ask about: ``deploy`` (it changes something, so
it asks) and the read-only ``status``."""

from __future__ import annotations

from harnessed import tool


class Deployer:
    def __init__(self) -> None:
        self.deployed: list[str] = []
        self.reads = 0

        @tool
        async def deploy(target: str) -> str:
            """Deploy to a target."""
            self.deployed.append(target)
            return f"deployed to {target}"

        @tool(read_only=True)
        async def status() -> str:
            """Read the deployment status."""
            self.reads += 1
            return "green"

        self.tools = [deploy, status]
