"""Model strings: ``"openai:gpt-4.1-mini"``, ``"anthropic:claude-sonnet-4-5"``."""

from __future__ import annotations

from typing import Any

from harnessed.models.base import Model

__all__ = ["resolve_model"]

_PROVIDERS = ("openai", "anthropic")


def resolve_model(spec: str | Model, **options: Any) -> Model:
    """Return ``spec`` if it already is a model, else build one from ``"provider:model"``.

    ``options`` are passed to the adapter's constructor (``api_key``, ``base_url`` ...).
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
    if provider == "anthropic":
        from harnessed.models.anthropic import AnthropicModel

        return AnthropicModel(name, **options)
    raise ValueError(
        f"unknown model provider {provider!r} in {spec!r}; known: {', '.join(_PROVIDERS)}"
    )
