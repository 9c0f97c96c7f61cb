"""Model strings: ``"openai:gpt-4.1-mini"``, ``"anthropic:claude-sonnet-4-5"``,
``"ollama:qwen3"``."""

from __future__ import annotations

import os
from typing import Any

from harnessed.models.base import Model

__all__ = ["ollama_base_url", "resolve_model"]

_PROVIDERS = ("openai", "anthropic", "ollama")
_OLLAMA_DEFAULT = "http://localhost:11434"


def ollama_base_url() -> str:
    """The OpenAI-compatible endpoint of the local Ollama server (``$OLLAMA_HOST`` or its
    default address), e.g. ``http://localhost:11434/v1``."""
    host = os.environ.get("OLLAMA_HOST", "").strip() or _OLLAMA_DEFAULT
    if "://" not in host:
        host = f"http://{host}"
    return host.rstrip("/") + "/v1"


def resolve_model(spec: str | Model, **options: Any) -> Model:
    """Return ``spec`` if it already is a model, else build one from ``"provider:model"``.

    ``options`` are passed to the adapter's constructor (``api_key``, ``base_url`` ...).
    ``ollama:<model>`` is an :class:`~harnessed.models.openai.OpenAIChatModel` talking to
    Ollama's OpenAI-compatible endpoint (``$OLLAMA_HOST``, else ``localhost:11434``) unless a
    ``base_url`` is given; its window is asked from Ollama.
    """
    if not isinstance(spec, str):
        if isinstance(spec, Model):
            return spec
        raise TypeError(f"model must be a Model or a 'provider:model' string, got {spec!r}")
    provider, sep, name = spec.partition(":")
    if not sep or not name:
        raise ValueError(
            f"model string {spec!r} must look like 'provider:model', "
            f"with provider one of {', '.join(_PROVIDERS)} (e.g. 'openai:gpt-4.1-mini')"
        )
    if provider == "openai":
        from harnessed.models.openai import OpenAIChatModel

        return OpenAIChatModel(name, **options)
    if provider == "ollama":
        from harnessed.models.openai import OpenAIChatModel

        options.setdefault("base_url", ollama_base_url())
        options["base_url"] = options["base_url"] or ollama_base_url()
        return OpenAIChatModel(name, **options)
    if provider == "anthropic":
        from harnessed.models.anthropic import AnthropicModel

        return AnthropicModel(name, **options)
    raise ValueError(
        f"unknown model provider {provider!r} in {spec!r}; known: {', '.join(_PROVIDERS)}"
    )
