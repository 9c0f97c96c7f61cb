"""The gateway's chat channels (Slack, Feishu, a signed webhook ...) and AG-UI, served by the
HTTP channel's app."""

from fastapi import FastAPI

from harnessed.gateway.routes.state import AppState

__all__ = ["add_channel_routes"]


def add_channel_routes(app: FastAPI, state: AppState, *, ag_ui: bool) -> None:
    """Mount each channel's own routes (their platforms sign requests: no bearer token) and,
    with ``ag_ui``, ``POST /v1/ag-ui`` (the bearer token, like the API)."""
    for channel in state.gateway.channels.values():
        app.router.routes.extend(channel.routes())
    if ag_ui:
        from harnessed.gateway.channels.agui import add_ag_ui_route

        add_ag_ui_route(app, state.gateway, state.current_user, state.keepalive)
