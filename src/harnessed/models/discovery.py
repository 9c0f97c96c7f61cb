"""Asking an OpenAI-compatible server for a model's context window.

Local and self-hosted servers run a model with a window they chose at start-up, which no
table of model names can know. Where the server tells it:

* vLLM (and servers copying it): ``GET /v1/models`` lists ``max_model_len`` per model;
* llama.cpp's ``llama-server``: ``GET /props`` has ``default_generation_settings.n_ctx``;
* Ollama: ``POST /api/show`` gives ``num_ctx`` among the model's parameters when it is set.
  Without it Ollama runs the model with its default context, a few thousand tokens, and
  silently cuts longer prompts, so the window is taken as the model's
  ``<architecture>.context_length`` capped at :data:`OLLAMA_DEFAULT_CTX`.

The three questions are asked at once, and all of them together get at most
:data:`DISCOVERY_DEADLINE` seconds: a server that hangs holds up the first request that long,
not once per question. Answers are cached per server and model for the life of the process. A
server that answers none of these in time (or is unreachable) simply leaves the window
unknown; nothing fails.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from typing import Any

import httpx2

__all__ = ["DISCOVERY_DEADLINE", "OLLAMA_DEFAULT_CTX", "ask_window", "server_root"]

DISCOVERY_DEADLINE = 3.0
"""Seconds all window questions to one server get together (see :func:`ask_window`)."""

OLLAMA_DEFAULT_CTX = 4096
"""The window assumed for an Ollama model without ``num_ctx`` (Ollama's own default)."""

logger = logging.getLogger(__name__)

_CACHE: dict[tuple[str, str], int | None] = {}
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def server_root(base_url: str) -> str:
    """The server's root URL: ``base_url`` without a trailing ``/v1``."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


async def ask_window(
    base_url: str,
    model: str,
    *,
    api_key: str | None = None,
    timeout: float = 5.0,
    deadline: float = DISCOVERY_DEADLINE,
) -> int | None:
    """The window the server at ``base_url`` reports for ``model``, or ``None``.

    The probes run concurrently; ``deadline`` bounds them all together (``timeout`` bounds
    each HTTP exchange). When several answer, vLLM's wins over llama.cpp's over Ollama's.
    """
    key = (base_url.rstrip("/"), model)
    if key in _CACHE:
        return _CACHE[key]
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    probes = (_vllm, _llama_cpp, _ollama)
    async with httpx2.AsyncClient(timeout=min(timeout, deadline), headers=headers) as client:
        tasks = [asyncio.create_task(probe(client, base_url, model)) for probe in probes]
        _, pending = await asyncio.wait(tasks, timeout=deadline)
        for task in pending:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if pending:
        logger.debug("window probes of %s unanswered after %.1f s", base_url, deadline)
    window = _first_answer(probes, tasks, model)
    _CACHE[key] = window
    return window


def _first_answer(
    probes: tuple[Any, ...], tasks: list[asyncio.Task[int | None]], model: str
) -> int | None:
    for probe, task in zip(probes, tasks, strict=True):
        if task.cancelled():
            continue
        exc = task.exception()
        if exc is not None:  # a question the server cannot answer leaves the window unknown
            logger.debug("window probe %s failed: %r", probe.__name__, exc)
            continue
        window = task.result()
        if window is not None:
            logger.info(
                "context window of %s from %s: %d tokens", model, probe.__name__[1:], window
            )
            return window
    return None


def _positive(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


async def _json(response: httpx2.Response) -> Any:
    if response.status_code != 200:
        return None
    return response.json()


async def _vllm(client: httpx2.AsyncClient, base_url: str, model: str) -> int | None:
    body = await _json(await client.get(f"{base_url.rstrip('/')}/models"))
    entries = body.get("data") if isinstance(body, Mapping) else None
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping) and entry.get("id") == model:
            return _positive(entry.get("max_model_len"))
    return None


async def _llama_cpp(client: httpx2.AsyncClient, base_url: str, model: str) -> int | None:
    body = await _json(await client.get(f"{server_root(base_url)}/props"))
    if not isinstance(body, Mapping):
        return None
    settings = body.get("default_generation_settings")
    if isinstance(settings, Mapping) and _positive(settings.get("n_ctx")):
        return _positive(settings.get("n_ctx"))
    return _positive(body.get("n_ctx"))


async def _ollama(client: httpx2.AsyncClient, base_url: str, model: str) -> int | None:
    response = await client.post(f"{server_root(base_url)}/api/show", json={"model": model})
    body = await _json(response)
    if not isinstance(body, Mapping):
        return None
    parameters = body.get("parameters")
    if isinstance(parameters, str):
        match = _NUM_CTX.search(parameters)
        if match:
            return _positive(int(match.group(1)))
    info = body.get("model_info")
    if isinstance(info, Mapping):
        for name, value in info.items():
            trained = _positive(value) if str(name).endswith(".context_length") else None
            if trained is not None:
                return min(trained, OLLAMA_DEFAULT_CTX)
    return None
