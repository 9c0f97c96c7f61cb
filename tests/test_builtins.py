"""``HarnessAgent``'s ``capabilities=`` and ``skills=`` reject wrong values by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harnessed import Capability, HarnessAgent
from harnessed.models import ScriptedModel
from harnessed.skills import Skills


class Cap(Capability):
    name = "cap"


def build(tmp_path: Path, **kw: Any) -> HarnessAgent:
    return HarnessAgent("a", ScriptedModel(["ok"]), workspace=tmp_path, memory=False, **kw)


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"capabilities": Cap()}, "got one Cap object: write capabilities=[Cap(...)]"),
        ({"capabilities": "cap"}, "capabilities must be a list of Capability objects, got str"),
        ({"capabilities": 3}, "capabilities must be a list of Capability objects, got int"),
        (
            {"capabilities": [Cap(), "x"]},
            "capabilities must be Capability objects: capabilities[1] is a str",
        ),
        ({"skills": "skills/"}, "skills must be True, False or a Skills object, got str 'skills/'"),
        ({"skills": [Skills()]}, "skills must be True, False or a Skills object, got list"),
        ({"subagents": "yes"}, "subagents must be True, False or a Subagents object, got str"),
    ],
)
def test_wrong_values_name_the_argument(tmp_path: Path, kw: dict[str, Any], words: str) -> None:
    with pytest.raises(TypeError) as caught:
        build(tmp_path, **kw)
    assert words in str(caught.value)
    if "skills" in kw:
        assert "capabilities" not in str(caught.value)


def test_right_values_still_work(tmp_path: Path) -> None:
    cap, skills = Cap(), Skills()
    agent = build(tmp_path, capabilities=(cap,), skills=skills)
    assert agent.skills is skills and agent.capabilities.find(Cap) is cap
