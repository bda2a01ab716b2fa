"""Where each node's connection is, and when the next attempt may start (Java's
``ConnectionState`` and ``ClusterConnectionStates``).

Reconnects back off exponentially with jitter, and each new attempt of a node that failed gets a
longer connection setup timeout (Java's ``ExponentialBackoff``s, base 2, jitter 0.2). Every
address a node's host name resolves to is tried in turn, one per connection attempt (KIP-602,
``network/host_resolver.py``). A quota's throttle time (KIP-219) holds a node's requests back
until it has passed, across reconnects.
"""

from __future__ import annotations

import enum
from typing import Callable, Dict

from cproducer.network.host_resolver import HostResolver, NodeAddresses
from cproducer.utils.backoff import ExponentialBackoff


class ConnectionState(enum.Enum):
    """Where a node's connection is (Java's ``ConnectionState``)."""

    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    CHECKING_API_VERSIONS = "checking_api_versions"
    AUTHENTICATING = "authenticating"
    READY = "ready"

    def __str__(self) -> str:
        return self.value


# the members by name, in the order they are declared
DISCONNECTED, CONNECTING, CHECKING_API_VERSIONS, AUTHENTICATING, READY = ConnectionState

# Java's RECONNECT_BACKOFF_EXP_BASE / _JITTER and CONNECTION_SETUP_TIMEOUT_EXP_BASE / _JITTER
_BACKOFF_EXP_BASE = 2
_BACKOFF_JITTER = 0.2


class _NodeBackoff:
    __slots__ = ("failures", "last_attempt_ms", "backoff_ms", "setup_timeout_ms")

    def __init__(self) -> None:
        self.failures = 0
        self.last_attempt_ms = 0
        self.backoff_ms = 0
        self.setup_timeout_ms = 0


class ClusterConnectionStates:
    """Per node: its failed attempts, reconnect backoff, setup timeout, addresses and throttle
    time. Whether a connection is open, and how far its setup is, is its channel's."""

    def __init__(
        self,
        reconnect_backoff_ms: int,
        reconnect_backoff_max_ms: int,
        setup_timeout_ms: int,
        setup_timeout_max_ms: int,
        random: Callable[[], float],
        host_resolver: HostResolver,
    ) -> None:
        self._reconnect_backoff = ExponentialBackoff(
            reconnect_backoff_ms,
            _BACKOFF_EXP_BASE,
            max(reconnect_backoff_max_ms, reconnect_backoff_ms),
            _BACKOFF_JITTER,
            random,
        )
        self._setup_timeout = ExponentialBackoff(
            setup_timeout_ms,
            _BACKOFF_EXP_BASE,
            max(setup_timeout_max_ms, setup_timeout_ms),
            _BACKOFF_JITTER,
            random,
        )
        self._default_setup_timeout_ms = setup_timeout_ms
        self._host_resolver = host_resolver
        self._nodes: Dict[int, _NodeBackoff] = {}
        self._addresses: Dict[int, NodeAddresses] = {}  # per node: its addresses, the next one
        #: per node: no request before this monotonic ms (KIP-219); kept across reconnects, as
        #: Java's ClusterConnectionStates keeps it
        self.throttle_until: Dict[int, int] = {}

    def can_connect(self, node_id: int, now_ms: int) -> bool:
        """The node's reconnect backoff has passed (or it never failed)."""
        b = self._nodes.get(node_id)
        return b is None or now_ms - b.last_attempt_ms >= b.backoff_ms

    def connection_delay(self, node_id: int, now_ms: int) -> int:
        """ms until a connection attempt to a disconnected node is allowed."""
        b = self._nodes.get(node_id)
        if b is None:
            return 0
        return max(b.last_attempt_ms + b.backoff_ms - now_ms, 0)

    def has_failed(self, node_id: int) -> bool:
        """The node's last attempt failed (or its connection was lost) and none has been ready
        since."""
        b = self._nodes.get(node_id)
        return b is not None and b.failures > 0

    def connecting(self, node_id: int, host: str, now_ms: int) -> NodeAddresses:
        """An attempt starts now: the node's addresses, moved on to the next one when this is
        not the first attempt on them (Java's ClusterConnectionStates.connecting)."""
        self._nodes.setdefault(node_id, _NodeBackoff()).last_attempt_ms = now_ms
        addresses = self._addresses.get(node_id)
        if addresses is None or addresses.host != host:
            addresses = NodeAddresses(host, self._host_resolver)
            self._addresses[node_id] = addresses
        else:
            addresses.move_to_next()
        return addresses

    def start_setup_timer(self, node_id: int) -> None:
        """The socket is connecting: the time its setup may take, longer after each failure."""
        b = self._nodes[node_id]
        b.setup_timeout_ms = self._setup_timeout.backoff(b.failures)

    def setup_timeout_ms(self, node_id: int) -> int:
        b = self._nodes.get(node_id)
        return b.setup_timeout_ms if b else self._default_setup_timeout_ms

    def failed(self, node_id: int, now_ms: int) -> None:
        """One more failed attempt: the next waits a longer backoff, counted from now (Java's
        ClusterConnectionStates.disconnected and authenticationFailed set lastConnectAttemptMs
        to the time of the failure, not of the connect: a connection refused only after a
        slow setup, a broker's delayed authentication refusal, still waits its backoff)."""
        b = self._nodes.setdefault(node_id, _NodeBackoff())
        b.last_attempt_ms = now_ms
        b.backoff_ms = self._reconnect_backoff.backoff(b.failures)
        b.failures += 1

    def ready(self, node_id: int) -> None:
        """The connection is ready: a later attempt starts over from the shortest backoff."""
        b = self._nodes.get(node_id)
        if b is not None:
            b.failures = 0
            b.backoff_ms = 0

    def closed(self, node_id: int, now_ms: int) -> None:
        """A ready connection closed: the next attempt waits the base backoff from now."""
        b = self._nodes.setdefault(node_id, _NodeBackoff())
        b.last_attempt_ms = now_ms
        b.backoff_ms = self._reconnect_backoff.backoff(0)

    def forget_addresses(self, node_id: int) -> None:
        """The node had connected: its host's addresses may have changed since (Java resolves
        the host again)."""
        addresses = self._addresses.get(node_id)
        if addresses is not None:
            addresses.clear()

    def throttle(self, node_id: int, until_ms: int) -> None:
        if until_ms > self.throttle_until.get(node_id, 0):
            self.throttle_until[node_id] = until_ms

    def is_throttled(self, node_id: int, now_ms: int) -> bool:
        """A quota's throttle time (KIP-219) is still running for ``node_id``."""
        until = self.throttle_until.get(node_id)
        return until is not None and now_ms < until

    def throttle_delay(self, node_id: int, now_ms: int) -> int:
        """ms until ``node_id``'s throttle time ends; 0 when it is not throttled (Java's
        throttleDelayMs)."""
        until = self.throttle_until.get(node_id)
        return 0 if until is None else max(until - now_ms, 0)
