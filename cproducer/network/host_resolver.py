"""Name resolution for connections (KIP-602, Java's HostResolver, ClientUtils and the address
part of ClusterConnectionStates).

``client.dns.lookup=use_all_dns_ips`` (the default since Kafka 3.0): a broker's host name is
resolved when a connection to it is made, and every address it resolves to is tried, in order,
one per connection attempt (with the reconnect backoff between attempts). When the list is used
up it is resolved again; after a connection that had been established drops, too (the broker's
address may have changed), and then the address just used goes last.
``resolve_canonical_bootstrap_servers_only``: each bootstrap host is resolved once, and every
address is replaced by its canonical name (reverse lookup); those names become the bootstrap
servers (Kerberos needs the canonical name of a host behind an alias).

One difference from Java, on purpose: Java keeps only the addresses of the first one's family
(the JVM's ``java.net.preferIPv6Addresses`` choice), so a name with a broken IPv6 address listed
first never reaches its IPv4 one. Python has no process-wide family preference; the system's
resolver already orders the addresses (RFC 6724), so all of them are tried, whatever the family,
as librdkafka does.

The resolver is injectable (the ``host_resolver`` hook): ``resolver(host) -> [address, ...]``,
the numeric addresses to try, in order.
"""

from __future__ import annotations

import inspect
import logging
import socket
from typing import Callable, List, Optional, Sequence, Tuple

from cproducer.errors import ConfigError

log = logging.getLogger("cproducer.network.host_resolver")

HostResolver = Callable[[str], Sequence[str]]

USE_ALL_DNS_IPS = "use_all_dns_ips"
RESOLVE_CANONICAL_BOOTSTRAP_SERVERS_ONLY = "resolve_canonical_bootstrap_servers_only"


def default_host_resolver(host: str) -> List[str]:
    """Every address ``host`` resolves to (IPv4 and IPv6), in the system resolver's order,
    without repeats. Raises ``socket.gaierror`` (an ``OSError``) when it resolves to nothing.
    An IPv6 address in brackets (``[::1]``, as some brokers advertise themselves) is taken as
    the address, as Java's InetAddress does."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    out: List[str] = []
    for _family, _type, _proto, _name, sockaddr in socket.getaddrinfo(
        host, None, socket.AF_UNSPEC, socket.SOCK_STREAM
    ):
        address = str(sockaddr[0])
        if address not in out:
            out.append(address)
    return out


def takes_address(socket_factory: Callable[..., object]) -> bool:
    """Whether a socket factory takes the ``address`` to connect to (``(host, port,
    send_buffer, recv_buffer, address)``). One made for the older ``(host, port, send_buffer,
    recv_buffer)`` resolves the host itself: it gets the four arguments, and the addresses of a
    name are not tried in turn for it."""
    try:
        params = inspect.signature(socket_factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "address" or p.kind is p.VAR_KEYWORD for p in params)


def check_host_resolver(resolver: object) -> HostResolver:
    if not callable(resolver):
        raise ConfigError(
            "host_resolver: expected a callable (host -> list of IP addresses), got "
            f"{type(resolver).__name__}"
        )
    return resolver  # type: ignore[return-value]


def resolve(host: str, resolver: HostResolver) -> List[str]:
    """``resolver(host)`` as a non-empty list of addresses; OSError when there is none."""
    addresses = [str(a) for a in resolver(host)]
    if not addresses:
        raise socket.gaierror(socket.EAI_NONAME, f"{host} resolved to no address")
    log.debug("resolved %s to %s", host, ", ".join(addresses))
    return addresses


def canonical_host_name(address: str) -> str:
    """The name a reverse lookup gives ``address``, or the address itself when there is none
    (Java's InetAddress.getCanonicalHostName)."""
    try:
        return socket.getnameinfo((address, 0), socket.NI_NAMEREQD)[0]
    except OSError:
        return address


def bootstrap_addresses(
    servers: Sequence[Tuple[str, int]],
    dns_lookup: str,
    resolver: HostResolver = default_host_resolver,
    canonical: Callable[[str], str] = canonical_host_name,
) -> List[Tuple[str, int]]:
    """The bootstrap (host, port) pairs to connect to (Java's parseAndValidateAddresses).

    ``use_all_dns_ips``: the configured names themselves, resolved at connection time.
    ``resolve_canonical_bootstrap_servers_only``: one pair per address of each configured host,
    with its canonical name; a host that does not resolve is left out with a warning, and
    ``ConfigError`` is raised when none does."""
    if dns_lookup != RESOLVE_CANONICAL_BOOTSTRAP_SERVERS_ONLY:
        return list(servers)
    out: List[Tuple[str, int]] = []
    failures: List[str] = []
    for host, port in servers:
        try:
            addresses = resolve(host, resolver)
        except OSError as exc:
            log.warning("cannot resolve bootstrap server %s:%d: %s", host, port, exc)
            failures.append(f"{host}: {exc}")
            continue
        for address in addresses:
            out.append((canonical(address), port))
    if not out:
        raise ConfigError(
            "bootstrap.servers: no resolvable bootstrap server (client.dns.lookup="
            f"{RESOLVE_CANONICAL_BOOTSTRAP_SERVERS_ONLY}): " + "; ".join(failures)
        )
    log.info("bootstrap servers by canonical name: %s", out)
    return out


class NodeAddresses:
    """The addresses of one node's host and which one the next connection attempt uses (Java's
    NodeConnectionState: addresses, addressIndex, lastAttemptedAddress)."""

    __slots__ = ("host", "_resolver", "_addresses", "_index", "_last_attempted")

    def __init__(self, host: str, resolver: HostResolver) -> None:
        self.host = host
        self._resolver = resolver
        self._addresses: List[str] = []
        self._index = 0
        self._last_attempted: Optional[str] = None

    def current(self) -> str:
        """The address to connect to now (resolving the host first when the list is empty).
        OSError when the host does not resolve."""
        if not self._addresses:
            self._addresses = resolve(self.host, self._resolver)
            self._index = 0
            # after re-resolving, do not start again with the address that just failed or
            # dropped (a dead load-balancer instance, say) when there is another
            if len(self._addresses) > 1 and self._addresses[0] == self._last_attempted:
                self._index = 1
        address = self._addresses[self._index]
        self._last_attempted = address
        return address

    def move_to_next(self) -> None:
        """A new connection attempt: the next address; past the last one, resolve again."""
        if not self._addresses:
            return
        self._index = (self._index + 1) % len(self._addresses)
        if self._index == 0:
            self._addresses = []

    def clear(self) -> None:
        """Resolve again before the next attempt (an established connection dropped)."""
        self._addresses = []

    @property
    def addresses(self) -> List[str]:
        return list(self._addresses)
