"""The task contract: a session's task, its requirements and their verification.

The application begins and ends a task and decides on its requirements
(:mod:`~harnessed.contract.controls`); the model sees the task in every request
(:mod:`~harnessed.contract.render`) and reports progress with its tools
(:mod:`~harnessed.contract.tools`); :class:`VerificationService` checks what the task needs.
"""

from typing import TYPE_CHECKING

from harnessed._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessed.contract.capability import TaskContract
    from harnessed.contract.state import (
        TASK,
        Requirement,
        TaskContextState,
        TaskContractConfig,
        TaskRevisionConflictError,
        VerificationResult,
    )
    from harnessed.contract.verification import VerificationService

__all__ = [
    "TASK",
    "Requirement",
    "TaskContextState",
    "TaskContract",
    "TaskContractConfig",
    "TaskRevisionConflictError",
    "VerificationResult",
    "VerificationService",
]

# imported when first used (``import harnessed`` names the contract's types)
_LAZY = {name: "harnessed.contract.state" for name in __all__}
_LAZY["TaskContract"] = "harnessed.contract.capability"
_LAZY["VerificationService"] = "harnessed.contract.verification"
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
