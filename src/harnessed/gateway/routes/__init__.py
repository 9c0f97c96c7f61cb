"""The HTTP channel's routes, one module per group. Each ``add_*_routes`` function declares
its group on the app's router, with the app's :class:`~harnessed.gateway.routes.state.AppState`
as what the routes depend on; :func:`harnessed.gateway.create_app` calls them in order (the
order of the routes, which the first match answers). Needs the ``serve`` extra.

The routes go on the app's own router rather than on routers of their own that the app
includes: the route table stays flat (one match per request, however FastAPI's version
includes routers) and ``app.dependency_overrides`` reaches every route.
"""

from harnessed.gateway.routes.channels import add_channel_routes
from harnessed.gateway.routes.confirmations import add_confirmation_routes
from harnessed.gateway.routes.page import add_page_routes
from harnessed.gateway.routes.sessions import add_session_routes
from harnessed.gateway.routes.state import AppState
from harnessed.gateway.routes.streaming import EventStreamResponse
from harnessed.gateway.routes.turns import add_control_routes, add_turn_routes

__all__ = [
    "AppState",
    "EventStreamResponse",
    "add_channel_routes",
    "add_confirmation_routes",
    "add_control_routes",
    "add_page_routes",
    "add_session_routes",
    "add_turn_routes",
]
