"""The web chat page: ``GET /`` and its script ``GET /chat.js`` (not in the API schema)."""

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

__all__ = ["add_page_routes"]

# the page runs its own script only (no inline script, no handler attributes, no other
# origin), talks to this server only and cannot be framed: a second line behind building
# every element with text, should markup ever reach the page
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; connect-src 'self'; "
    "style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def add_page_routes(router: APIRouter) -> None:
    """The page and its script, read once (the script is ``markdown.js`` and ``chat.js`` in
    one response: one request, no build step)."""
    page = _asset("chat.html")
    script = _asset("markdown.js") + "\n" + _asset("chat.js")

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def chat() -> HTMLResponse:
        return HTMLResponse(page, headers=_PAGE_HEADERS)

    @router.get("/chat.js", include_in_schema=False)
    async def chat_js() -> Response:
        return Response(script, media_type="text/javascript", headers=_PAGE_HEADERS)


def _asset(name: str) -> str:
    return resources.files("harnessed.gateway").joinpath("static", name).read_text("utf-8")
