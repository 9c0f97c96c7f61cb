"""Observability: OpenTelemetry spans for agent runs (BEHAVIOUR.md section 15).

harnessed depends only on ``opentelemetry-api``: without an SDK configured by the application
every span is a no-op. See :mod:`harnessed.tracing.spans` for the spans and their
attributes.
"""

from harnessed.tracing.spans import TRACER_NAME, Tracing

__all__ = ["TRACER_NAME", "Tracing"]
