"""The context compiler: every model request rebuilt from state, fitted and explained."""

from harnessed.context.seam import PrepareInfo, RequestPreparer, passthrough

__all__ = ["PrepareInfo", "RequestPreparer", "passthrough"]
