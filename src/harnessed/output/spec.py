"""OutputSpec: a Python type as the schema of a final answer, and the check of an answer.

Any type pydantic can validate works: a pydantic model, a dataclass, a ``TypedDict``, or a
plain type (``int``, ``list[str]``, ``Literal[...]``). A schema whose root is not an object is
wrapped as ``{"result": ...}`` (tool arguments and strict JSON schemas must be objects); the
wrapping never shows in the value returned.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:  # pydantic is imported with the first output type (~20 ms)
    import pydantic

__all__ = [
    "output_spec",
    "FINAL_TOOL",
    "OutputError",
    "OutputRefusedError",
    "OutputSpec",
    "OutputValidationError",
    "strict_schema",
]

T = TypeVar("T")

FINAL_TOOL = "final_result"
"""The final-answer tool offered to models without native structured output."""

_WRAP = "result"
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)


class OutputError(Exception):
    """The run could not produce the typed final answer it was asked for."""


class OutputValidationError(OutputError):
    """The model's final answer did not validate, and the retries ran out."""

    def __init__(self, message: str, *, errors: str, attempts: int) -> None:
        super().__init__(message)
        self.errors = errors
        """The validation errors of the last answer."""
        self.attempts = attempts


class OutputRefusedError(OutputError):
    """The model refused to give the answer (a provider-reported refusal)."""

    def __init__(self, message: str, *, refusal: str) -> None:
        super().__init__(message)
        self.refusal = refusal


class _Invalid(Exception):
    def __init__(self, errors: str) -> None:
        super().__init__(errors)
        self.errors = errors


class OutputSpec(Generic[T]):
    """The typed final answer of a call: its schema and its validation.

    Args:
        output_type: What the answer must be (see the module docstring).
        retries: How many invalid answers go back to the model before the call fails.
        name: The schema's name as providers see it (default: the type's name).
    """

    def __init__(self, output_type: Any, *, retries: int = 2, name: str | None = None) -> None:
        if isinstance(output_type, OutputSpec):
            raise TypeError("pass the output type itself, not an OutputSpec")
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ValueError(f"OutputSpec retries must be a non-negative int, got {retries!r}")
        import pydantic

        try:
            self.adapter: pydantic.TypeAdapter[T] = pydantic.TypeAdapter(output_type)
            schema = self.adapter.json_schema()
        except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as exc:
            raise TypeError(f"output_type {output_type!r} has no JSON schema: {exc}") from None
        self.output_type = output_type
        self.retries = retries
        raw_name = name or getattr(output_type, "__name__", None) or "output"
        self.name = re.sub(r"[^A-Za-z0-9_-]", "_", str(raw_name))[:64] or "output"
        self.description = str(schema.get("description") or "")
        self.wrapped = schema.get("type") != "object" or "properties" not in schema
        if self.wrapped:
            defs = schema.pop("$defs", None)
            body: dict[str, Any] = {
                "type": "object",
                "properties": {_WRAP: schema},
                "required": [_WRAP],
            }
            if defs:
                body["$defs"] = defs
            schema = body
        self.schema: dict[str, Any] = schema
        """The JSON schema of the answer as the model sends it (an object)."""
        strict = strict_schema(schema)
        self.strict = strict is not None
        self.model_schema: dict[str, Any] = strict if strict is not None else schema
        """What providers get: the strict form when the schema has one."""

    def __repr__(self) -> str:
        return f"OutputSpec({self.output_type!r}, retries={self.retries})"

    # ---------------------------------------------------------------- checks
    def parse_text(self, text: str) -> T:
        """The value of a JSON answer (a fenced code block is accepted); raises on errors."""
        match = _FENCE.match(text)
        raw = match.group(1) if match else text.strip()
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _Invalid(f"the answer is not JSON ({exc}); answer with the JSON only") from None
        return self.parse_data(data)

    def parse_data(self, data: Any) -> T:
        """The value of decoded answer data (tool arguments, or parsed JSON)."""
        if self.wrapped:
            if not isinstance(data, Mapping) or _WRAP not in data:
                raise _Invalid(f"the answer must be an object with the key {_WRAP!r}")
            data = data[_WRAP]
        import pydantic

        try:
            return self.adapter.validate_python(data)
        except pydantic.ValidationError as exc:
            raise _Invalid(_describe(exc)) from None

    def dump(self, value: T) -> Any:
        """``value`` as JSON-compatible data (what is logged and sent over HTTP)."""
        return self.adapter.dump_python(value, mode="json")

    def load(self, data: Any) -> T:
        """A logged answer (:meth:`dump`'s data) as the value again."""
        return self.adapter.validate_python(data)


def invalid_errors(exc: BaseException) -> str | None:
    """The errors of a failed :meth:`OutputSpec.parse_text` / ``parse_data`` (else ``None``)."""
    return exc.errors if isinstance(exc, _Invalid) else None


def _describe(exc: pydantic.ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False)[:20]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "(the answer)"
        parts.append(f"{where}: {error.get('msg')}")
    return "; ".join(parts)


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """``schema`` in the strict subset providers constrain to (every object closed, every
    property required, no defaults), or ``None`` when it cannot be (free-form mappings)."""
    result = copy.deepcopy(dict(schema))

    def visit(node: Any) -> bool:
        if not isinstance(node, dict):
            return True
        node.pop("default", None)
        if node.get("type") == "object" or "properties" in node:
            extra = node.get("additionalProperties")
            if extra not in (None, False) or "patternProperties" in node:
                return False
            if "properties" not in node:
                return False
            node["additionalProperties"] = False
            node["required"] = list(node["properties"])
        for key in ("properties", "$defs", "definitions"):
            if not all(visit(v) for v in (node.get(key) or {}).values()):
                return False
        for key in ("items", "not", "contains"):
            if not visit(node.get(key)):
                return False
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            if not all(visit(v) for v in node.get(key) or ()):
                return False
        return True

    return result if visit(result) else None


def output_spec(output_type: Any, retries: int = 2) -> OutputSpec[Any] | None:
    """``output_type`` as a spec (``None`` and ``str``: free text). Specs of hashable types
    are kept (a schema costs ~1.5 ms to build), the oldest dropped past 256."""
    if output_type is None or output_type is str:
        return None
    if isinstance(output_type, OutputSpec):
        return output_type
    try:
        return _SPECS[(output_type, retries)]
    except TypeError:  # an unhashable type: built each time
        return OutputSpec(output_type, retries=retries)
    except KeyError:
        pass
    spec: OutputSpec[Any] = OutputSpec(output_type, retries=retries)
    if len(_SPECS) >= _SPECS_KEPT:
        _SPECS.pop(next(iter(_SPECS)))
    _SPECS[(output_type, retries)] = spec
    return spec


_SPECS: dict[tuple[Any, int], OutputSpec[Any]] = {}
_SPECS_KEPT = 256
