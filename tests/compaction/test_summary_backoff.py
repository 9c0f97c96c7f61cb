"""A summary model that keeps failing is not asked again at every step."""

from __future__ import annotations

from harnessed import CompactionConfig, ModelError
from harnessed.models import ModelRequest, ScriptedModel
from tests.compaction.helpers import conversation, custom, seeded
from tests.support.fixtures import CTX, collect


class SummaryOutage:
    """Reasoning works; summaries fail until ``healthy`` is set."""

    def __init__(self) -> None:
        self.healthy = False
        self.summary_requests = 0

    def __call__(self, request: ModelRequest) -> str:
        if request.purpose == "summary":
            self.summary_requests += 1
            if not self.healthy:
                raise ModelError("summary service unavailable")
            return "## Session intent\nKeep going.\n## Next steps\nMore of the same."
        return "ok"


async def test_failed_summaries_back_off_and_a_success_resets() -> None:
    outage = SummaryOutage()
    model = ScriptedModel(responder=outage, context_window=200_000)
    config = CompactionConfig(trigger_messages=10, keep_messages=4, keep_tokens=0)
    agent, _ = await seeded(conversation(5), model, compaction=config)
    deferred = []
    for turn in range(7):
        events = await collect(agent, f"step {turn}", CTX)
        manifest = agent.last_manifest(CTX)
        assert manifest is not None
        deferred.append([t for t in manifest.transforms if t.startswith("summary_deferred")])
        assert all(e["status"] == "failed" for e in custom(events, "compaction_end"))
    # tried at calls 1, 3 and 6 (waiting 1, then 2, then 4 due summaries): not 7 times
    assert outage.summary_requests == 3
    assert deferred[1] == ["summary_deferred:1"] and deferred[3] == ["summary_deferred:2"]
    outage.healthy = True
    for turn in range(4):  # the next attempt succeeds, and the session compacts normally again
        await collect(agent, f"later {turn}", CTX)
    assert outage.summary_requests >= 4
    manifest = agent.last_manifest(CTX)
    assert manifest is not None
    assert not any(t.startswith("summary_deferred") for t in manifest.transforms)
