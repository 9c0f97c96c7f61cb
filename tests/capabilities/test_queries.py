"""Capabilities ask each other through read-only views (``views`` / ``host.query``), in any
order of setup, and the built-ins do so too (the shell and the skills)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harnessed import HarnessAgent
from harnessed.capabilities import Capability, CapabilityHost
from harnessed.capabilities.queries import SkillFolders, SkillsSandbox
from harnessed.models import ScriptedModel


@dataclass(frozen=True)
class Quota:
    """A view: how many calls a session may make (known once its owner is set up)."""

    limit: Callable[[], int]


class Quotas(Capability):
    def __init__(self) -> None:
        self._limit = 0

    def views(self) -> Sequence[object]:
        return (Quota(lambda: self._limit),)

    def setup(self, host: CapabilityHost) -> None:
        self._limit = 3


class Asker(Capability):
    def __init__(self) -> None:
        self.quota: Quota | None = None
        self.sandbox: SkillsSandbox | None = None

    def setup(self, host: CapabilityHost) -> None:
        self.quota = host.query(Quota)
        self.sandbox = host.query(SkillsSandbox)


def test_a_capability_set_up_earlier_asks_a_later_one_through_its_view() -> None:
    asker, quotas = Asker(), Quotas()
    HarnessAgent("a", ScriptedModel(["hi"]), capabilities=[asker, quotas])
    assert asker.quota is not None and asker.quota.limit() == 3  # answered after its setup
    assert asker.sandbox is None  # nobody answers: no shell


def test_no_answer_is_none() -> None:
    asker = Asker()
    HarnessAgent("a", ScriptedModel(["hi"]), capabilities=[asker])
    assert asker.quota is None


def test_the_skills_answer_with_their_folders(tmp_path: object) -> None:
    from harnessed.skills import Skills

    class Reader(Capability):
        found: SkillFolders | None = None

        def setup(self, host: CapabilityHost) -> None:
            self.found = host.query(SkillFolders)

    reader = Reader()
    HarnessAgent(
        "a",
        ScriptedModel(["hi"]),
        capabilities=[reader, Skills(model_edits_skills=True, workspace_skills=False)],
    )
    assert reader.found is not None and reader.found.model_may_edit is True
