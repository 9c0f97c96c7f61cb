"""Questions the model asks the user, and the check of an answer.

A question is a confirmation request whose ``details`` say ``{"kind": "question", ...}``: it
parks the turn, is listed, streamed and answered exactly like a tool confirmation. The answer
travels as the approval's feedback, encoded as JSON, so it is logged with the answer record
and survives in a parked step's state until the call resumes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "QUESTION_KIND",
    "QuestionAnswerError",
    "check_answer",
    "check_schema",
    "decode_answer",
    "encode_answer",
    "is_question",
]

QUESTION_KIND = "question"


class QuestionAnswerError(ValueError):
    """An answer that does not fit its question (not one of the choices, or not valid
    against the question's schema)."""


def is_question(details: Mapping[str, Any]) -> bool:
    return details.get("kind") == QUESTION_KIND


def question_details(
    question: str, choices: Sequence[str] | None, schema: Mapping[str, Any] | None
) -> dict[str, Any]:
    return {
        "kind": QUESTION_KIND,
        "question": question,
        "choices": list(choices) if choices is not None else None,
        "schema": dict(schema) if schema is not None else None,
    }


def check_schema(schema: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` when ``schema`` is not a usable JSON schema."""
    validator = _validator_class(schema)
    try:
        validator.check_schema(schema)
    except Exception as exc:  # jsonschema.SchemaError
        raise ValueError(f"not a valid JSON schema: {getattr(exc, 'message', exc)}") from None


def check_answer(details: Mapping[str, Any], answer: Any) -> None:
    """Raise :class:`QuestionAnswerError` when ``answer`` does not fit the question."""
    try:
        json.dumps(answer)
    except (TypeError, ValueError):
        raise QuestionAnswerError(f"the answer must be JSON data, got {answer!r}") from None
    schema = details.get("schema")
    choices = details.get("choices")
    if schema:
        validator = _validator_class(schema)(schema)
        errors = sorted(validator.iter_errors(answer), key=lambda e: list(e.path))
        if errors:
            where = "/".join(str(p) for p in errors[0].path) or "the answer"
            raise QuestionAnswerError(f"{where}: {errors[0].message}")
    elif choices:
        if answer not in choices:
            raise QuestionAnswerError(
                f"the answer must be one of {', '.join(map(repr, choices))}, got {answer!r}"
            )
    elif not isinstance(answer, str):
        raise QuestionAnswerError(f"the answer must be text, got {type(answer).__name__}")


def encode_answer(answer: Any) -> str:
    return json.dumps(answer, ensure_ascii=False)


def decode_answer(feedback: str) -> Any:
    try:
        return json.loads(feedback)
    except json.JSONDecodeError:
        return feedback  # answered as a plain approval with text feedback


def _validator_class(schema: Mapping[str, Any]) -> Any:
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - the dev extra has it
        raise ImportError(
            "a question with a JSON schema needs the jsonschema package: "
            "pip install 'harnessed[questions]'"
        ) from None
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
