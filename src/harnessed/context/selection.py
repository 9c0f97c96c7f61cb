"""Which optional materials go first when a request does not fit."""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.context.materials import Material
from harnessed.context.policy import SelectionPolicy

__all__ = ["drop_order"]


def drop_order(optional: Sequence[Material], policy: SelectionPolicy | None) -> list[Material]:
    """Optional (or condensable) materials in the order they are dropped or condensed.

    Default: memory, then knowledge, then everything else; within a group the lowest priority
    first, then by id. A ``policy`` may give another order for the ids it names (the rest follow
    in the default order) but may never name a required or system item.
    """
    default = sorted(optional, key=lambda m: (m.group, m.priority, m.id))
    if policy is None:
        return default
    by_id = {m.id: m for m in optional if not m.required and m.placement != "system"}
    chosen: list[Material] = []
    for material_id in policy(list(by_id.values())):
        material = by_id.get(material_id)
        if material is None:
            raise ValueError(
                f"selection_policy named {material_id!r}, which is not an optional material of "
                "this request (system and required items can never be dropped)"
            )
        if material in chosen:
            raise ValueError(f"selection_policy named {material_id!r} twice")
        chosen.append(material)
    return chosen + [m for m in default if m not in chosen]
