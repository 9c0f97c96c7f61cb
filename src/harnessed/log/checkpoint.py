"""Checkpoints: how a replaced working history is written to the session log.

The log holds every message once, in full. When request preparation replaces the working
history (a summary, pruned or offloaded tool output, truncated arguments), the change is
written as a ``history/checkpoint`` record that describes the new history in terms of the
one before it:

* ``ops``: a list of ``[i, j]`` (keep messages ``i`` to ``j - 1`` of the history before) and
  ``{"message": {...}}`` (a message of its own: a summary, a pruned or offloaded view);
* ``base_len``: how many messages the history had when the checkpoint was made. Messages the
  log gained after them (another writer's) stay after the rewritten part;
* ``after``: the sequence number of the checkpoint the history before reflected (0: none).

So a summary costs the summary and a range, pruning one result costs that result's preview and
two ranges: the size of a checkpoint follows what changed, not the length of the history.
Replaying a log — messages appended, checkpoints applied in order — gives the working history
at any position. A checkpoint whose ``after`` does not match the last one applied (two writers
rewrote the history at once) is skipped: the history then shows the logged messages unchanged,
which is always a valid history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harnessed.messages import Msg, shared_prefix

__all__ = ["CheckpointError", "apply_checkpoint", "checkpoint_ops"]

Op = list[int] | dict[str, Any]


class CheckpointError(ValueError):
    """A checkpoint record that cannot be applied to the history it names."""


def checkpoint_ops(base: Sequence[Msg], target: Sequence[Msg]) -> list[Op] | None:
    """The ops that turn ``base`` into ``target`` (``None`` when they are the same).

    Messages are immutable, so an unchanged message is the same object (or an equal one, such
    as a message read back from storage): only the others are written.
    """
    start = shared_prefix(base, target)
    if start == len(base) == len(target):
        return None
    positions: dict[int, int] = {}  # id(message) -> index in base, for the changed region
    by_id: dict[str, int] = {}
    for at in range(start, len(base)):
        positions[id(base[at])] = at
        by_id.setdefault(base[at].id, at)
    ops: list[Op] = [[0, start]] if start else []
    for message in target[start:]:
        index: int | None = positions.get(id(message))
        if index is None:
            candidate = by_id.get(message.id)
            if candidate is not None and base[candidate] == message:
                index = candidate
        last = ops[-1] if ops else None
        if index is None:
            ops.append({"message": message.to_dict()})
        elif isinstance(last, list) and last[1] == index:
            last[1] = index + 1
        else:
            ops.append([index, index + 1])
    if ops == [[0, len(base)]]:
        return None
    return ops


def apply_checkpoint(history: list[Msg], payload: Mapping[str, Any]) -> list[Msg]:
    """The history after the checkpoint ``payload`` (``history`` itself is not changed)."""
    try:
        base_len = int(payload["base_len"])
        ops = payload["ops"]
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint without a valid {exc}") from None
    if not 0 <= base_len <= len(history):
        raise CheckpointError(
            f"checkpoint made for a history of {base_len} messages, found {len(history)}"
        )
    out: list[Msg] = []
    for op in ops:
        if isinstance(op, list) and len(op) == 2:
            i, j = int(op[0]), int(op[1])
            if not 0 <= i <= j <= base_len:
                raise CheckpointError(f"checkpoint range {op} outside {base_len} messages")
            out.extend(history[i:j])
        elif isinstance(op, Mapping) and isinstance(op.get("message"), Mapping):
            out.append(Msg.from_dict(op["message"]))
        else:
            raise CheckpointError(f"unknown checkpoint op {op!r}")
    out.extend(history[base_len:])
    return out
