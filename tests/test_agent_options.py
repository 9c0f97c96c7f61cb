"""HarnessAgent's constructor: a few named parameters, typed options, clone()."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from harnessed import HarnessAgent, RuntimeContext, ScriptedModel, tool
from harnessed.agent_options import AgentOptions


def explicit_parameters() -> list[str]:
    signature = inspect.signature(HarnessAgent.__init__)
    return [
        p.name
        for p in signature.parameters.values()
        if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD
    ]


def test_at_most_fifteen_named_parameters_and_the_rest_are_typed_options() -> None:
    assert len(explicit_parameters()) <= 15
    assert set(explicit_parameters()).isdisjoint(AgentOptions.__optional_keys__)
    assert {"shell", "prune", "permission_rules", "state_store"} <= AgentOptions.__optional_keys__


def test_an_unknown_keyword_is_a_type_error_that_names_it() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'enable_plan'"):
        HarnessAgent("a", ScriptedModel(), enable_plan=True)  # type: ignore[call-arg]


def test_options_still_reach_what_they_configure(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_output_tokens must be positive"):
        HarnessAgent("a", ScriptedModel(), max_output_tokens=0)
    agent = HarnessAgent(
        "a", ScriptedModel(), workspace=tmp_path, memory=False, prune=None, enable_plan_mode=True
    )
    assert agent.prune is None
    plain = HarnessAgent("a", ScriptedModel(), workspace=tmp_path, memory=False)
    assert set(agent.toolkit.names) - set(plain.toolkit.names)  # plan mode's tools


def test_the_agent_is_composed_not_mixed() -> None:
    from harnessed.agent_host import AgentHost

    assert HarnessAgent.__bases__ == (AgentHost,)


async def test_a_clone_keeps_the_arguments_and_applies_the_changes() -> None:
    model = ScriptedModel(["from the clone"])
    agent = HarnessAgent(
        "a", ScriptedModel(), sys_prompt="You fix bugs.", memory=False, max_iters=3
    )
    clone = agent.clone(name="b", model=model)
    assert (clone.name, clone.sys_prompt, clone.max_iters) == ("b", "You fix bugs.", 3)
    assert clone.memory is None and agent.memory is None
    reply = await clone.call("hello", RuntimeContext(user_id="u"))
    assert reply.text == "from the clone"
    assert await agent.sessions("u") == []  # the original saw nothing


async def test_a_clone_without_features_keeps_the_configuration_only(tmp_path: Path) -> None:
    from harnessed.compaction import CompactionConfig
    from harnessed.contract import TaskContractConfig

    @tool
    async def deploy(target: str) -> str:
        """Deploy to a target."""
        return f"deployed {target}"

    compaction = CompactionConfig(trigger_messages=40)
    agent = HarnessAgent(
        "a",
        ScriptedModel(),
        sys_prompt="You fix bugs.",
        tools=[deploy],
        workspace=tmp_path,
        enable_task_list=True,
        enable_plan_mode=True,
        permission_mode="accept_edits",
        task_contract=TaskContractConfig(show_requirements=True),
        instructions={"style": "Be brief."},
        compaction=compaction,
        max_iters=4,
    )
    assert {"deploy", "todo_write", "plan_enter", "read_file"} <= set(agent.toolkit.names)
    bare = agent.clone(features=False, name="child")
    assert (bare.sys_prompt, bare.max_iters, bare.compaction) == ("You fix bugs.", 4, compaction)
    assert bare.workspace is not None and bare.memory is None and bare.skills is None
    assert bare.toolkit.names == []  # no tool of the parent, no built-in feature
    assert bare.approval_gate.mode is None
    assert "style" in agent.compiler.instructions and "style" not in bare.compiler.instructions
    chosen = agent.clone(features=False, enable_task_list=True, tools=[deploy])
    assert sorted(chosen.toolkit.names) == ["deploy", "todo_write"]
    everything = agent.clone()
    assert set(everything.toolkit.names) == set(agent.toolkit.names)
    assert everything.state_store is not agent.state_store  # built again from the arguments
    shared = agent.clone(features=False, shared_stores=True)
    assert shared.state_store is agent.state_store
    assert shared.session_store is agent.session_store
