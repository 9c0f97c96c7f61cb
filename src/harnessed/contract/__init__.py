"""The task contract: a session's task, its requirements and their verification.

The application begins and ends a task and decides on its requirements
(:mod:`~harnessed.contract.controls`); the model sees the task in every request
(:mod:`~harnessed.contract.render`) and reports progress with its tools
(:mod:`~harnessed.contract.tools`); :class:`VerificationService` checks what the task needs.
"""

from harnessed.contract.state import (
    Requirement,
    TaskContextState,
    TaskContractConfig,
    TaskRevisionConflictError,
    VerificationResult,
)
from harnessed.contract.verification import VerificationService

__all__ = [
    "Requirement",
    "TaskContextState",
    "TaskContractConfig",
    "TaskRevisionConflictError",
    "VerificationResult",
    "VerificationService",
]
