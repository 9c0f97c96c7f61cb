"""The ``harnessed`` command line."""

from harnessed.cli.main import main

__all__ = ["main"]
