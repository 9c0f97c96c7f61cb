"""``NetworkPolicy``: which addresses ``web_fetch`` may reach (the check itself is in
:mod:`harnessed.web.guard`, where connections are made)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["BlockedAddressError", "NetworkPolicy"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class BlockedAddressError(OSError):
    """A connection to an address the policy refuses."""


@dataclass(frozen=True)
class NetworkPolicy:
    """Where connections may go.

    By default only public addresses: loopback, private (RFC 1918, unique local), link-local
    (cloud metadata services live there), carrier-grade NAT, multicast, reserved and
    unspecified addresses are refused. ``allowed_networks`` lets some through anyway (an
    intranet, or ``127.0.0.0/8`` for a test server).
    """

    allowed_networks: tuple[str, ...] = ()
    """Networks (``"10.1.0.0/16"``, ``"127.0.0.1/32"``) allowed although not public."""
    _networks: tuple[Network, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.allowed_networks, str):
            raise ValueError("NetworkPolicy.allowed_networks must be a list of networks")
        try:
            parsed = tuple(ipaddress.ip_network(n, strict=False) for n in self.allowed_networks)
        except ValueError as exc:
            raise ValueError(f"NetworkPolicy.allowed_networks: {exc}") from None
        object.__setattr__(self, "allowed_networks", tuple(str(n) for n in parsed))
        object.__setattr__(self, "_networks", parsed)

    def allows(self, address: str) -> bool:
        """Whether a connection to the IP ``address`` may be made."""
        ip: Address = ipaddress.ip_address(address.split("%", 1)[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if any(ip in n for n in self._networks):
            return True
        return ip.is_global and not ip.is_multicast

    def check(self, host: str, addresses: Iterable[str]) -> list[str]:
        """The addresses of ``host``, all allowed; else :class:`BlockedAddressError`."""
        found = list(dict.fromkeys(addresses))
        if not found:
            raise BlockedAddressError(f"{host} has no address")
        refused = [a for a in found if not self.allows(a)]
        if refused:
            raise BlockedAddressError(
                f"{host} resolves to {', '.join(refused)}, a loopback, private or link-local "
                "address that web_fetch does not reach"
            )
        return found
