"""HMAC-SHA256 signatures of the generic webhook channel, both ways.

A request carries ``X-Harnessed-Timestamp`` (Unix seconds) and ``X-Harnessed-Signature``:
``v1=`` and the hex HMAC-SHA256, under the shared secret, of ``"<timestamp>."`` followed by
the raw body. A receiver accepts it when the signature matches (compared in constant time),
the timestamp is within the replay window of its clock, and the same signature was not
accepted before inside that window.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "ReplayGuard",
    "SignatureError",
    "sign",
    "signed_headers",
]

TIMESTAMP_HEADER = "X-Harnessed-Timestamp"
SIGNATURE_HEADER = "X-Harnessed-Signature"
_MAX_REMEMBERED = 100_000


class SignatureError(ValueError):
    """A request's signature is missing, wrong, too old, or was seen before."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


def signed_headers(secret: str, body: bytes, *, now: float | None = None) -> dict[str, str]:
    """The two headers that sign ``body`` now."""
    timestamp = str(int(time.time() if now is None else now))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(secret, timestamp, body)}


class ReplayGuard:
    """Checks signatures and refuses replays inside the window."""

    def __init__(
        self, secret: str, window_seconds: float, clock: Callable[[], float] = time.time
    ) -> None:
        self.secret = secret
        self.window = window_seconds
        self.clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()

    def check(self, headers: Mapping[str, str], body: bytes) -> None:
        """Raise :class:`SignatureError` unless the request is signed, fresh and new."""
        timestamp = headers.get(TIMESTAMP_HEADER.lower()) or headers.get(TIMESTAMP_HEADER)
        signature = headers.get(SIGNATURE_HEADER.lower()) or headers.get(SIGNATURE_HEADER)
        if not timestamp or not signature:
            raise SignatureError("the request is not signed")
        if not timestamp.isdigit() or len(timestamp) > 12:
            raise SignatureError("the signature timestamp is not a number of seconds")
        now = self.clock()
        if abs(now - int(timestamp)) > self.window:
            raise SignatureError("the signature timestamp is outside the replay window")
        if not hmac.compare_digest(sign(self.secret, timestamp, body), signature):
            raise SignatureError("the signature does not match")
        while self._seen:
            oldest, at = next(iter(self._seen.items()))
            if now - at <= 2 * self.window and len(self._seen) < _MAX_REMEMBERED:
                break
            del self._seen[oldest]
        if signature in self._seen:
            raise SignatureError("the request was delivered before (a replay)")
        self._seen[signature] = now
