"""Long-term memory: daily ledgers, a curated MEMORY.md, flushes, consolidation, maintenance."""

from harnessed.memory.auxiliary import AuxiliaryModel
from harnessed.memory.capability import Memory
from harnessed.memory.config import FlushThrottle, MemoryConfig
from harnessed.memory.consolidate import (
    ConsolidationError,
    ConsolidationResult,
    MaintenanceResult,
)
from harnessed.memory.flush import FlushResult
from harnessed.memory.ledger import Ledger, MemoryPlace, MemoryState, Watermark
from harnessed.memory.lookup import MemoryMatch, MemoryPathError
from harnessed.memory.manager import MemoryManager

__all__ = [
    "Memory",
    "AuxiliaryModel",
    "ConsolidationError",
    "ConsolidationResult",
    "FlushResult",
    "FlushThrottle",
    "Ledger",
    "MaintenanceResult",
    "MemoryConfig",
    "MemoryManager",
    "MemoryMatch",
    "MemoryPathError",
    "MemoryPlace",
    "MemoryState",
    "Watermark",
]
