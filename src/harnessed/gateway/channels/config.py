"""Channels from a configuration file (``harnessed serve --channels FILE``).

A TOML (or JSON) file lists channels; each has a ``type`` (``slack``, ``feishu`` or
``webhook``) and the fields of its config class. A string ``"${NAME}"`` is read from the
environment variable ``NAME`` (so secrets stay out of the file)::

    [[channel]]
    type = "slack"
    signing_secret = "${SLACK_SIGNING_SECRET}"
    bot_token = "${SLACK_BOT_TOKEN}"
    scope = "channel-peer"

    [[channel]]
    type = "webhook"
    secret = "${HOOK_SECRET}"
    callback_url = "https://example.internal/agent-replies"
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harnessed.gateway.channels.base import Channel

__all__ = ["channel_from_dict", "load_channels"]

_VAR = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")

_TYPES = {
    "slack": ("harnessed.gateway.channels.slack", "SlackChannel", "SlackConfig", "slack"),
    "feishu": ("harnessed.gateway.channels.feishu", "FeishuChannel", "FeishuConfig", "feishu"),
    "lark": ("harnessed.gateway.channels.feishu", "FeishuChannel", "FeishuConfig", "feishu"),
    "webhook": ("harnessed.gateway.channels.webhook", "WebhookChannel", "WebhookConfig", "webhook"),
}


def _expand(value: Any, env: Mapping[str, str], where: str) -> Any:
    if isinstance(value, str):
        found = _VAR.match(value)
        if found is None:
            return value
        name = found.group(1)
        if name not in env:
            raise ValueError(f"{where}: the environment variable {name} is not set")
        return env[name]
    return value


def channel_from_dict(
    raw: Mapping[str, Any], env: Mapping[str, str], where: str = "channel"
) -> Channel:
    """One channel from its table (see the module docstring)."""
    import importlib

    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be a table")
    kind = raw.get("type")
    if kind not in _TYPES:
        raise ValueError(f"{where}.type must be one of {sorted(_TYPES)}, got {kind!r}")
    module_name, channel_name, config_name, extra = _TYPES[kind]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(
            f"{where}: the {kind} channel needs the {extra} extra "
            f"(pip install 'harnessed[{extra}]'): {exc}"
        ) from None
    config_class = getattr(module, config_name)
    known = {f.name for f in dataclasses.fields(config_class)}
    fields = {k: _expand(v, env, f"{where}.{k}") for k, v in raw.items() if k != "type"}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown} for a {kind} channel")
    channel: Channel = getattr(module, channel_name)(config_class(**fields))
    return channel


def load_channels(path: str | Path, env: Mapping[str, str]) -> list[Channel]:
    """The channels of a TOML or JSON file."""
    file = Path(path)
    text = file.read_text("utf-8")
    data = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
    tables = data.get("channel", data.get("channels", [])) if isinstance(data, dict) else data
    if not isinstance(tables, list):
        raise ValueError(f"{file}: expected a list of [[channel]] tables")
    return [
        channel_from_dict(t, env, f"{file.name}: channel {i + 1}") for i, t in enumerate(tables)
    ]
