"""The YAML loader of ``SKILL.md`` front matter (PyYAML, imported only when a skill is read)."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["REFUSED_TOKENS", "StrictLoader"]

REFUSED_TOKENS = {
    yaml.AnchorToken: "anchors (&name)",
    yaml.AliasToken: "aliases (*name)",
    yaml.TagToken: "type tags (!!type)",
}


class StrictLoader(yaml.BaseLoader):
    """PyYAML's base loader (every scalar is a string), refusing duplicate keys and flow
    collections."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if node.flow_style:
            raise yaml.constructor.ConstructorError(
                None, None, "flow-style mappings ({...}) are not allowed", node.start_mark
            )
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_sequence(self, node: yaml.SequenceNode, deep: bool = False) -> list[Any]:
        if node.flow_style:
            raise yaml.constructor.ConstructorError(
                None, None, "flow-style sequences ([...]) are not allowed", node.start_mark
            )
        return super().construct_sequence(node, deep=deep)


StrictLoader.add_constructor("tag:yaml.org,2002:map", StrictLoader.construct_mapping)
StrictLoader.add_constructor("tag:yaml.org,2002:seq", StrictLoader.construct_sequence)
