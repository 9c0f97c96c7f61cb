"""``WebFetchConfig``: how ``web_fetch`` fetches (kept apart from the fetcher, so an agent
that offers the tool loads no HTTP client until the model first fetches a page)."""

from __future__ import annotations

from dataclasses import dataclass, field

from harnessed.web.policy import NetworkPolicy

__all__ = ["WebFetchConfig"]


@dataclass(frozen=True, slots=True)
class WebFetchConfig:
    """How ``web_fetch`` fetches."""

    max_bytes: int = 2_000_000
    """Bytes of a response read at most; a longer page is cut there (and says so)."""
    timeout: float = 20.0
    """Seconds for the whole fetch, redirects included (a server that dribbles is cut off)."""
    max_redirects: int = 5
    page_lines: int = 200
    """Lines a call returns when it gives no ``limit``."""
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    """Which addresses may be reached (public ones only, by default)."""
    user_agent: str = "harnessed-web-fetch/1 (+https://pypi.org/project/harnessed/)"
    cached_pages: int = 16
    """Pages kept converted, so reading on with ``offset`` does not fetch again."""

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_redirects", "page_lines", "cached_pages"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (0 if name == "max_redirects" else 1):
                raise ValueError(f"WebFetchConfig.{name} must be a positive integer, got {value!r}")
        if not isinstance(self.timeout, int | float) or self.timeout <= 0:
            raise ValueError(f"WebFetchConfig.timeout must be positive, got {self.timeout!r}")
        if not isinstance(self.network, NetworkPolicy):
            raise ValueError("WebFetchConfig.network must be a NetworkPolicy")
