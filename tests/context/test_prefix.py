"""The shared prefix of a request and the last one: exact tokens, work only for what changed."""

from __future__ import annotations

from harnessed.context.meter import Meter
from harnessed.context.prefix import PrefixMemo
from harnessed.messages import Msg
from harnessed.tokens import default_estimator


class CountingMeter(Meter):
    def __init__(self) -> None:
        super().__init__(default_estimator())
        self.measured = 0

    def message(self, msg: Msg) -> int:
        self.measured += 1
        return super().message(msg)


def test_the_shared_prefix_is_exact_and_only_new_messages_are_measured() -> None:
    meter, memo = CountingMeter(), PrefixMemo()
    history = [Msg.user(f"message {i} " * 20) for i in range(2_000)]
    assert memo.shared(("a", "u", "s"), (), history, 0, meter) == (0, 0)
    longer = [*history, Msg.assistant("a reply"), Msg.user("and more")]
    meter.measured = 0
    count, tokens = memo.shared(("a", "u", "s"), (), longer, 7, meter)
    assert count == len(history)
    assert tokens == 7 + sum(Meter(default_estimator()).message(m) for m in history)
    assert meter.measured <= 2  # the two new messages, not the 2,000 before them
    # an equal copy (read back from the log) counts as shared; a changed message ends it
    copies = [Msg.from_dict(m.to_dict()) for m in longer]
    copies[1000] = Msg.user("rewritten")
    count, _ = memo.shared(("a", "u", "s"), (), copies, 0, meter)
    assert count == 1000
