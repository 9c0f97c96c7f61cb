"""Typed results: what a call returns and the typed final answer it can be asked for.

* :mod:`.spec` — :class:`OutputSpec`: an output type's JSON schema and the check of an answer
  (with the errors a failed check sends back to the model);
* :mod:`.result` — :class:`RunResult`: the reply, the typed ``output``, the status, usage,
  steps and ids of one call.

How the run produces the answer (native structured output or the ``final_result`` tool) is in
:mod:`harnessed.run.output_step`.
"""

from harnessed.output.result import ResultStatus, RunResult
from harnessed.output.spec import (
    FINAL_TOOL,
    OutputError,
    OutputRefusedError,
    OutputSpec,
    OutputValidationError,
)

__all__ = [
    "FINAL_TOOL",
    "OutputError",
    "OutputRefusedError",
    "OutputSpec",
    "OutputValidationError",
    "ResultStatus",
    "RunResult",
]
