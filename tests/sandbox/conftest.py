"""Shared fixtures of the sandbox tests.

The bubblewrap tests need ``bwrap`` and user namespaces. On a developer machine without them
they skip with the reason; in CI (``CI=true``, or ``HARNESSED_REQUIRE_SANDBOX=1`` which
``.ci/run`` sets) they fail instead, so a broken sandbox can never pass unnoticed.
"""

from __future__ import annotations

import os

import pytest

from harnessed.sandbox import BubblewrapSandbox


def require_bwrap(sandbox: BubblewrapSandbox) -> BubblewrapSandbox:
    reason = sandbox.unavailable_reason()
    if reason is None:
        return sandbox
    if os.environ.get("CI") == "true" or os.environ.get("HARNESSED_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"bubblewrap is required here but unusable: {reason}")
    pytest.skip(f"bubblewrap unusable on this machine: {reason}")


@pytest.fixture
def bwrap() -> BubblewrapSandbox:
    return require_bwrap(BubblewrapSandbox())
