"""Observability: OpenTelemetry spans for agent runs (BEHAVIOUR.md section 15).

harnessed depends only on ``opentelemetry-api``: without an SDK configured by the application
every span is a no-op. See :func:`traced_run` for the spans and their attributes.
"""

from harnessed.observability.tracing import TRACER_NAME, traced_run

__all__ = ["TRACER_NAME", "traced_run"]
