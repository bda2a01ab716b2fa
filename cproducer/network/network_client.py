"""NetworkClient: non-blocking connections to the brokers (Java's ``NetworkClient``).

One connection per node (a ``KafkaChannel``, ``network/kafka_channel.py``), driven by
``selectors`` from the Sender thread's ``poll``. A connection goes connecting →
checking_api_versions (the client sends ApiVersions itself) → [authenticating] → ready. With SASL
(``sasl_authenticator_factory``) each connection gets a ``SaslClientAuthenticator`` once
ApiVersions has answered: its SaslHandshake and SaslAuthenticate requests go out as internal
requests and their answers go back to it, until it completes (ready) or refuses (the connection
closes, and the error is kept for the Sender and the metadata: Java's authentication failure,
fatal rather than retried quietly). When the broker stated a session lifetime (KIP-368), the
connection stops taking requests once re-authentication is due, and re-authenticates as soon as
nothing is in flight on it.

Reconnects back off (``network/cluster_connection_states.py``); a request that outlives
``request.timeout.ms`` closes its connection and fails every request in flight on it, as in
Java; a connection with nothing in flight for ``connections.max.idle.ms`` is closed. An answer
carrying a ``throttle_time_ms`` (a quota, KIP-219) throttles its node: no request goes to it
until that time has passed (the broker answered at once and muted the connection for it), and
the requests still in flight on it get that time added to their timeout, as Java's. Every time
here is the clock's monotonic ms: a wall-clock step times nothing out. A peer that sends garbage
(bad length, wrong correlation id, undecodable frame) is disconnected with a logged reason.

The socket factory is injectable (``network/socket_factory.py``): TLS, or a test proxy that
presents virtual brokers, can slot in. ``DefaultMetadataUpdater`` (``network/metadata_updater.py``)
keeps ``ProducerMetadata`` fresh through the same client, and goes back to the bootstrap servers
when the known brokers are lost.
"""

from __future__ import annotations

import errno
import logging
import os
import random as _random
import selectors
import socket
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from cproducer import errors
from cproducer.network.client_request import ClientRequest, ClientResponse
from cproducer.network.cluster_connection_states import (
    AUTHENTICATING,
    CHECKING_API_VERSIONS,
    CONNECTING,
    DISCONNECTED,
    READY,
    ClusterConnectionStates,
    ConnectionState,
)
from cproducer.network.connection_failures import ConnectionFailures
from cproducer.network.host_resolver import HostResolver, default_host_resolver, takes_address
from cproducer.network.kafka_channel import RECV_CHUNK, KafkaChannel
from cproducer.network.metadata_updater import DefaultMetadataUpdater
from cproducer.network.network_metrics import NetworkMetrics
from cproducer.network.selector_wakeup import SelectorWakeup
from cproducer.network.socket_factory import default_socket_factory
from cproducer.protocol import ApiVersionsRequest, choose_version
from cproducer.protocol.api_versions import FinalizedFeatures
from cproducer.protocol.broker_versions import caps_for
from cproducer.utils.sampled_stat import MetricConfig
from cproducer.utils.time import SYSTEM_CLOCK, Clock

# the names this module has always offered, whichever module defines them now
__all__ = [
    "AUTHENTICATING",
    "CHECKING_API_VERSIONS",
    "CONNECTING",
    "DISCONNECTED",
    "NO_DELAY_LIMIT_MS",
    "READY",
    "ClientRequest",
    "ClientResponse",
    "ConnectionState",
    "DefaultMetadataUpdater",
    "NetworkClient",
    "default_socket_factory",
]

log = logging.getLogger("cproducer.network.network_client")

# "no limit" for a delay (Java's Long.MAX_VALUE); callers take the min with their own bounds
NO_DELAY_LIMIT_MS = 2**62

# KIP-219: from these versions on (API key -> version), an answer's throttle_time_ms is the
# client's to honour; before them the broker delayed the answer itself (Java's
# AbstractResponse.shouldClientThrottle of each response)
_CLIENT_THROTTLE_FROM = {
    0: 6,  # Produce
    3: 6,  # Metadata
    10: 2,  # FindCoordinator
    18: 2,  # ApiVersions
    19: 3,  # CreateTopics
    22: 1,  # InitProducerId
    24: 1,  # AddPartitionsToTxn
    25: 1,  # AddOffsetsToTxn
    26: 1,  # EndTxn
    28: 1,  # TxnOffsetCommit
}


class NetworkClient:
    def __init__(
        self,
        client_id: str,
        metadata: Any = None,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1000,
        request_timeout_ms: int = 30000,
        max_in_flight_requests_per_connection: int = 5,
        socket_connection_setup_timeout_ms: int = 10000,
        socket_connection_setup_timeout_max_ms: int = 30000,
        send_buffer_bytes: int = 131072,
        receive_buffer_bytes: int = 32768,
        connections_max_idle_ms: int = 540000,
        clock: Clock = SYSTEM_CLOCK,
        socket_factory: Callable[..., Any] = default_socket_factory,
        max_response_size: int = 100 * 1024 * 1024,
        random: Optional[Callable[[], float]] = None,
        sasl_authenticator_factory: Optional[Callable[[int], Any]] = None,
        host_resolver: HostResolver = default_host_resolver,
        metadata_recovery_strategy: str = "rebootstrap",
        metadata_recovery_rebootstrap_trigger_ms: int = 300000,
        api_version: Optional[Tuple[int, ...]] = None,
        selector: Optional[Callable[[], selectors.BaseSelector]] = None,
        metrics: Optional[NetworkMetrics] = None,
    ) -> None:
        """``random``: a zero-argument function returning a float in [0, 1) (the backoffs'
        jitter, the least-loaded node's starting point); default: a generator of its own.
        ``host_resolver(host)``: the addresses to try for a host name, in order.
        ``api_version``: a Kafka release, e.g. ``(2, 5)``: every connection speaks no newer
        version of an API than that release does (kafka-python's ``api_version``); None: the
        broker's and the client's versions alone decide. ``selector``: the
        ``selectors.BaseSelector`` class to poll with (kafka-python's ``selector``).
        ``metrics``: where the connections' traffic is counted (default: a NetworkMetrics of
        its own)."""
        self.client_id = client_id
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self.max_in_flight = max_in_flight_requests_per_connection
        self.setup_timeout_ms = socket_connection_setup_timeout_ms
        self.send_buffer_bytes = send_buffer_bytes
        self.receive_buffer_bytes = receive_buffer_bytes
        self.connections_max_idle_ms = connections_max_idle_ms
        self.clock = clock
        #: now, in the clock's monotonic ms (what every ``now_ms`` argument here is)
        self.time_ms: Callable[[], int] = clock.monotonic_ms
        self._random = random if random is not None else _random.Random().random
        self._connection_states = ClusterConnectionStates(
            reconnect_backoff_ms,
            reconnect_backoff_max_ms,
            socket_connection_setup_timeout_ms,
            socket_connection_setup_timeout_max_ms,
            self._random,
            host_resolver,
        )
        # the states' own dict of throttle times: can_send_more reads it for every request
        self._throttle_until = self._connection_states.throttle_until
        self.socket_factory = socket_factory
        self._factory_takes_address = takes_address(socket_factory)
        self.max_response_size = max_response_size
        self.sasl_authenticator_factory = sasl_authenticator_factory
        #: ``fn(node_id, host, port, up, reason)`` on the I/O thread when a connection becomes
        #: ready (up) or fails to connect / is lost (a facade's error events)
        self.connection_listener: Optional[Callable[[int, str, int, bool, str], None]] = None
        # authentication failures not yet taken by the Sender (it fails the waiting batches)
        self._authentication_failures: List[Tuple[int, BaseException]] = []
        self.host_resolver = host_resolver
        self.rebootstrap = metadata_recovery_strategy == "rebootstrap"
        self.rebootstrap_trigger_ms = metadata_recovery_rebootstrap_trigger_ms
        self.api_version_caps: Optional[Dict[int, int]] = None
        if api_version is not None:
            self.api_version, self.api_version_caps = caps_for(tuple(api_version))
        #: the newest finalized features the brokers' ApiVersions answers named (Java's
        #: ApiVersions): the transaction manager picks its transactions version from them
        self.finalized_features = FinalizedFeatures(self.api_version_caps)
        self._selector = (selectors.DefaultSelector if selector is None else selector)()
        self._conns: Dict[int, KafkaChannel] = {}
        self._correlation = 0
        self._completed: List[ClientResponse] = []
        # plain sockets are read into this one buffer first (the poller's thread only): a
        # recv(256 KiB) would make, map, shrink and unmap a 256 KiB bytes object per read, with
        # the GIL held
        self._recv_buffer = bytearray(RECV_CHUNK)
        self._recv_view = memoryview(self._recv_buffer)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        # the wake-up flags, which the C paths of send set without a Python call
        self.waker = SelectorWakeup(self._wake_w)
        self._closed = False
        self.metadata_updater = DefaultMetadataUpdater(self, metadata) if metadata else None
        self.connection_failures = ConnectionFailures()
        self.metrics = metrics if metrics is not None else NetworkMetrics(MetricConfig())

    # ------------------------------------------------------------------ connection state
    def _next_correlation_id(self) -> int:
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        return self._correlation

    def is_ready(self, node: Any, now_ms: int) -> bool:
        conn = self._conns.get(node.id)
        return (
            conn is not None
            and conn.state == READY
            and self.can_send_more(node.id)
            and not self.is_throttled(node.id, now_ms)
        )

    def can_send_more(self, node_id: int) -> bool:
        """The connection is ready and has room for one more request (Java's canSendRequest:
        a throttled node cannot either)."""
        conn = self._conns.get(node_id)
        if conn is None or conn.state != READY:
            return False
        if len(conn.in_flight) >= self.max_in_flight or len(conn.send_queue) != 0:
            return False
        until = self._throttle_until.get(node_id)
        due = conn.reauthenticate_at_ms
        if until is None and due is None:
            return True
        now_ms = self.time_ms()
        return (until is None or now_ms >= until) and (due is None or now_ms < due)

    def is_throttled(self, node_id: int, now_ms: int) -> bool:
        """A quota's throttle time (KIP-219) is still running for ``node_id``."""
        return self._connection_states.is_throttled(node_id, now_ms)

    def throttle_delay(self, node_id: int, now_ms: int) -> int:
        """ms until ``node_id``'s throttle time ends; 0 when it is not throttled (Java's
        throttleDelayMs)."""
        return self._connection_states.throttle_delay(node_id, now_ms)

    def mute_data_wakeups(self, nodes: Sequence[Any]) -> None:
        """Before a poll: appends need not wake it when every one of ``nodes`` (the cluster's
        brokers) has a ready connection at its in-flight limit. Nothing new can be sent to any
        of them before an answer comes, and an answer ends the poll by itself. A connection
        that is not ready is left out of this: its connecting, or its backoff's end, is a
        reason to look again that no I/O may announce."""
        conns = self._conns
        for node in nodes:
            conn = conns.get(node.id)
            if conn is None or conn.state != READY or len(conn.in_flight) < self.max_in_flight:
                return
        if nodes:
            self.waker.data_muted = True

    def connection_state(self, node_id: int) -> ConnectionState:
        conn = self._conns.get(node_id)
        return DISCONNECTED if conn is None else conn.state

    def connection_delay(self, node: Any, now_ms: int) -> int:
        """ms until a connection attempt to ``node`` is allowed (Java's connectionDelay).

        Connecting or connected: "no limit", since the connection itself wakes the poll when it
        completes, an answer arrives or the socket drains (a 0 would make the Sender spin while a
        connection has its in-flight limit of requests out); connected and throttled (KIP-219):
        what is left of the throttle time, which no I/O announces the end of (Java's
        pollDelayMs). Disconnected: what is left of the reconnect backoff."""
        conn = self._conns.get(node.id)
        if conn is not None:
            throttled = self.throttle_delay(node.id, now_ms)
            return throttled if throttled > 0 and conn.state == READY else NO_DELAY_LIMIT_MS
        return self._connection_states.connection_delay(node.id, now_ms)

    def connection_failed(self, node: Any) -> bool:
        return node.id not in self._conns and self._connection_states.has_failed(node.id)

    def ready(self, node: Any, now_ms: int) -> bool:
        """True when a request can be sent to ``node`` now; starts connecting if needed."""
        if node is None:
            return False
        if self.is_ready(node, now_ms):
            return True
        if node.id not in self._conns and self._connection_states.can_connect(node.id, now_ms):
            self._initiate_connect(node, now_ms)
        return False

    def _initiate_connect(self, node: Any, now_ms: int) -> None:
        self.metrics.register_node(node.id)
        addresses = self._connection_states.connecting(node.id, node.host, now_ms)
        address: Optional[str] = None
        try:
            if self._factory_takes_address:
                address = addresses.current()
                sock = self.socket_factory(
                    node.host,
                    node.port,
                    self.send_buffer_bytes,
                    self.receive_buffer_bytes,
                    address=address,
                )
            else:  # a factory that resolves the host itself
                sock = self.socket_factory(
                    node.host, node.port, self.send_buffer_bytes, self.receive_buffer_bytes
                )
        except OSError as exc:
            self.connection_failures.failed(node.id, node.host, node.port, str(exc), now_ms)
            self._connection_states.failed(node.id, now_ms)
            if self.metadata_updater is not None:
                self.metadata_updater.handle_disconnection(node.id)
            self._tell_listener(node.id, node.host, node.port, False, f"connect failed: {exc}")
            return
        version = ApiVersionsRequest.MAX_VERSION
        if self.api_version_caps is not None:
            version = min(version, self.api_version_caps[ApiVersionsRequest.API_KEY])
        conn = KafkaChannel(node.id, node.host, node.port, sock, now_ms, version)
        self._connection_states.start_setup_timer(node.id)
        self._conns[node.id] = conn
        self._selector.register(sock, selectors.EVENT_WRITE, conn)
        log.debug("connecting to node %s at %s:%s (%s)", node.id, node.host, node.port, address)

    def _connected(self, conn: KafkaChannel, now_ms: int) -> None:
        self.metrics.connection_created(now_ms)
        conn.state = CHECKING_API_VERSIONS
        self._send_api_versions(conn, now_ms)

    def _send_api_versions(self, conn: KafkaChannel, now_ms: int) -> None:
        self._send_internal(conn, ApiVersionsRequest(), conn.api_versions_version, now_ms)

    def _send_internal(self, conn: KafkaChannel, request: Any, version: int, now_ms: int) -> None:
        """Send a request of the connection's own setup (ApiVersions, SASL): its answer goes
        to the client."""
        req = ClientRequest(
            conn.node_id, request, version, now_ms, None, self.request_timeout_ms, True
        )
        req.internal = True
        self._enqueue(conn, req)
        self._flush(conn, now_ms)

    def api_version_for(self, node_id: int, request_cls: Any) -> int:
        conn = self._conns.get(node_id)
        if conn is None or not conn.api_versions:
            raise errors.IllegalStateError(f"no ApiVersions known for node {node_id}")
        return choose_version(request_cls, conn.api_versions.get(request_cls.API_KEY))

    # ------------------------------------------------------------------ sending
    def send(self, request: ClientRequest, now_ms: int) -> None:
        conn = self._conns.get(request.node_id)
        if conn is None or conn.state != READY:
            raise errors.IllegalStateError(
                f"attempt to send a request to node {request.node_id}, which is not ready"
            )
        if request.api_version < 0:
            request.api_version = self.api_version_for(request.node_id, type(request.request))
        request.created_ms = now_ms
        self._enqueue(conn, request)
        self._flush(conn, now_ms)

    def _enqueue(self, conn: KafkaChannel, request: ClientRequest) -> None:
        request.correlation_id = self._next_correlation_id()
        conn.enqueue(request, self.client_id)
        # every caller goes on to _flush, which sets the selector interest once it has written

    def _flush(self, conn: KafkaChannel, now_ms: int) -> None:
        """Write as much of the send queue as the socket takes."""
        try:
            conn.write(now_ms, self._written)
        except OSError as exc:
            self._disconnect(conn, now_ms, f"send failed: {exc}", errors.NetworkError(str(exc)))
            return
        conn.update_interest(self._selector)

    def _written(self, conn: KafkaChannel, request: ClientRequest, now_ms: int) -> None:
        self.metrics.request_sent(conn.node_id, request.size_bytes, now_ms)
        if not request.expect_response:
            # acks=0: done once written, as Java completes it
            self._completed.append(ClientResponse(request, conn.node_id, now_ms))

    # ------------------------------------------------------------------ polling
    def wakeup(self) -> None:
        """Make the current or next poll return at once (any thread). A byte goes through the
        socketpair only when the poller may be blocked in select (a syscall per new batch
        otherwise); see ``SelectorWakeup`` for why no wake-up is lost."""
        self.waker.wakeup()

    def poll(self, timeout_ms: int, now_ms: int) -> List[ClientResponse]:
        if self._closed:
            return []
        self._maybe_reauthenticate(now_ms)
        metadata_timeout = (
            self.metadata_updater.maybe_update(now_ms) if self.metadata_updater else 2**31
        )
        timeout = max(0, min(timeout_ms, metadata_timeout, self._next_timeout(now_ms)))
        if self._completed:
            timeout = 0
        waker = self.waker
        if waker.begin_select():
            timeout = 0
        io_time = self.metrics.record_io_time
        if io_time:
            select_start_ns = self.clock.nanoseconds()
        try:
            events = self._selector.select(timeout / 1000.0)
        except (OSError, ValueError) as exc:
            log.warning("select failed: %s", exc)
            events = []
        finally:
            waker.end_select()
        if io_time:
            io_start_ns = self.clock.nanoseconds()
        now_ms = self.time_ms()
        for key, mask in events:
            conn = key.data
            if conn is None:
                self._drain_wakeup()
                continue
            if conn.node_id not in self._conns or self._conns[conn.node_id] is not conn:
                continue
            if conn.state == CONNECTING:
                if mask & selectors.EVENT_WRITE:
                    err = conn.connect_error()
                    if err:
                        reason = f"{os.strerror(err)} ({errno.errorcode.get(err, err)})"
                        self._disconnect(conn, now_ms, reason, errors.NetworkError(reason))
                        continue
                    self._connected(conn, now_ms)
                continue
            if mask & selectors.EVENT_READ:
                self._read(conn, now_ms)
            if mask & selectors.EVENT_WRITE and conn.node_id in self._conns:
                self._flush(conn, now_ms)
        self._handle_timeouts(now_ms)
        if self.metadata_updater is not None:
            self.metadata_updater.maybe_rebootstrap_after_trigger(now_ms)
        if io_time:
            self.metrics.poll_time(
                io_start_ns - select_start_ns, self.clock.nanoseconds() - io_start_ns, now_ms
            )
        completed, self._completed = self._completed, []
        for resp in completed:
            self._complete(resp)
        return completed

    def has_ready_connection(self, nodes: List[Any]) -> bool:
        """True when a connection to one of ``nodes`` is ready (Java's LeastLoadedNode's
        atLeastOneConnectionReady)."""
        for node in nodes:
            conn = self._conns.get(node.id)
            if conn is not None and conn.state == READY:
                return True
        return False

    def any_connection_ready(self) -> bool:
        """True when some connection (a broker's or a bootstrap server's) is ready; may be
        called from any thread."""
        return any(conn.state == READY for conn in list(self._conns.values()))

    def disconnect_all(self, nodes: List[Any], reason: str) -> None:
        """Close the connections to ``nodes`` (their requests in flight fail as disconnected)."""
        now_ms = self.time_ms()
        for node in nodes:
            conn = self._conns.get(node.id)
            if conn is not None:
                self._disconnect(conn, now_ms, reason, errors.NetworkError(reason), requested=True)

    def _drain_wakeup(self) -> None:
        # Drain first, then clear: a wakeup() between the two is not lost, because the caller
        # goes on to a full Sender iteration that sees whatever that wakeup was for.
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError, OSError):
            pass
        self.waker.drained()

    def _next_timeout(self, now_ms: int) -> int:
        out = 2**31
        for conn in self._conns.values():
            if conn.state == CONNECTING:
                limit = self._connection_states.setup_timeout_ms(conn.node_id)
                out = min(out, conn.started_ms + limit - now_ms)
            for req in conn.in_flight:
                out = min(out, req.created_ms + req.throttle_ms + req.request_timeout_ms - now_ms)
                break
            if conn.reauthenticate_at_ms is not None and conn.state == READY:
                out = min(out, conn.reauthenticate_at_ms - now_ms)
        return out

    def _handle_timeouts(self, now_ms: int) -> None:
        for conn in list(self._conns.values()):
            if conn.state == CONNECTING:
                limit = self._connection_states.setup_timeout_ms(conn.node_id)
                if now_ms - conn.started_ms >= limit:
                    reason = f"connection setup timed out after {limit} ms"
                    self._disconnect(conn, now_ms, reason, errors.NetworkError(reason))
                continue
            idle_ms = now_ms - conn.last_activity_ms
            if (
                idle_ms >= self.connections_max_idle_ms
                and conn.state is READY
                and not conn.in_flight
                and not conn.send_queue
            ):
                # Java's Selector closes it too; a request later reconnects
                reason = f"idle for {idle_ms} ms (connections.max.idle.ms)"
                self._disconnect(conn, now_ms, reason, None)
                continue
            for req in conn.in_flight:
                # a throttle time given meanwhile does not count (Java's hasExpiredRequest)
                if now_ms - req.created_ms - req.throttle_ms >= req.request_timeout_ms:
                    reason = (
                        f"request {type(req.request).__name__} (correlation id "
                        f"{req.correlation_id}) timed out after {req.request_timeout_ms} ms"
                    )
                    self._disconnect(
                        conn, now_ms, reason, errors.RequestTimedOutError(reason), timed_out=True
                    )
                    break

    def _read(self, conn: KafkaChannel, now_ms: int) -> None:
        try:
            still_open = conn.read(self._recv_buffer, self._recv_view)
        except OSError as exc:
            self._disconnect(conn, now_ms, f"receive failed: {exc}", errors.NetworkError(str(exc)))
            return
        if not still_open:
            reason = "the peer closed the connection"
            self._disconnect(conn, now_ms, reason, errors.NetworkError(reason))
            return
        conn.last_activity_ms = now_ms
        if conn.has_pending_output():
            self._flush(conn, now_ms)  # the handshake may have finished: queued requests can go
            if self._conns.get(conn.node_id) is not conn:
                return
        bad_length = conn.handle_frames(self.max_response_size, self._handle_frame, now_ms)
        if bad_length is not None:
            self._disconnect(conn, now_ms, str(bad_length), bad_length)

    def _handle_frame(self, conn: KafkaChannel, frame: memoryview, now_ms: int) -> bool:
        """False when the frame closed the connection."""
        self.metrics.response_received(conn.node_id, len(frame) + 4, now_ms)
        if conn.unanswered and conn.drop_unanswered(frame):
            return True
        if not conn.in_flight:
            reason = f"node {conn.node_id} sent a response nobody asked for"
            self._disconnect(conn, now_ms, reason, errors.CorruptResponseError(reason))
            return False
        try:
            req, response = conn.take_response(frame)
        except errors.CorruptResponseError as exc:
            self._disconnect(conn, now_ms, f"bad response from node {conn.node_id}: {exc}", exc)
            return False
        # (a bare SASL token's answer is bytes: no throttle time, and internal)
        throttle_ms = getattr(response, "throttle_time_ms", None)
        if throttle_ms is not None:
            self.metrics.throttle_time(conn.node_id, throttle_ms, now_ms)
            if throttle_ms > 0:
                self._maybe_throttle(conn, req, throttle_ms, now_ms)
        if req.internal:
            if isinstance(req.request, ApiVersionsRequest):
                return self._handle_api_versions(conn, response, now_ms)
            return self._handle_sasl(conn, response, now_ms)
        self._completed.append(ClientResponse(req, conn.node_id, now_ms, response))
        return True

    def _maybe_throttle(
        self, conn: KafkaChannel, req: ClientRequest, throttle_ms: int, now_ms: int
    ) -> None:
        """Java's maybeThrottle: an answer at a version whose throttle time is the client's to
        honour (KIP-219) holds the node's requests back until it has passed; the requests in
        flight on the connection have it added to their timeout."""
        since = _CLIENT_THROTTLE_FROM.get(req.request.API_KEY)
        if since is None or req.api_version < since:
            return
        for other in conn.in_flight:
            other.throttle_ms += throttle_ms
        self._connection_states.throttle(conn.node_id, now_ms + throttle_ms)
        log.debug("node %s throttled for %d ms (a quota)", conn.node_id, throttle_ms)

    def _handle_api_versions(self, conn: KafkaChannel, response: Any, now_ms: int) -> bool:
        if conn.retry_api_versions(response):
            self._send_api_versions(conn, now_ms)
            return True
        if response.error_code != errors.NoError.errno:
            reason = f"ApiVersions failed with error {response.error_code}"
            self._disconnect(conn, now_ms, reason, errors.exception_for(response.error_code))
            return False
        # api_version: what the broker offers, narrowed to what that release speaks
        conn.set_api_versions(response.api_versions, self.api_version_caps)
        self.finalized_features.update(response)
        if self.sasl_authenticator_factory is not None:
            authenticator = self.sasl_authenticator_factory(conn.node_id)
            try:
                request, version = conn.begin_authentication(authenticator, now_ms)
            except errors.AuthenticationError as exc:
                self._authentication_failed(conn, now_ms, exc)
                return False
            self._send_internal(conn, request, version, now_ms)
            return True
        self._ready(conn)
        return True

    def _ready(self, conn: KafkaChannel) -> None:
        conn.state = READY
        self._connection_states.ready(conn.node_id)
        log.debug("node %s ready", conn.node_id)
        self.connection_failures.ready(conn.node_id, conn.host, conn.port)
        self._tell_listener(conn.node_id, conn.host, conn.port, True, "ready")

    # ------------------------------------------------------------------ SASL
    def _handle_sasl(self, conn: KafkaChannel, response: Any, now_ms: int) -> bool:
        try:
            following = conn.authentication_answered(response, now_ms)
        except errors.AuthenticationError as exc:
            self._authentication_failed(conn, now_ms, exc)
            return False
        if following is not None:
            self._send_internal(conn, following[0], following[1], now_ms)
            return True
        if conn.authenticator.authentications > 1:
            log.debug("node %s: re-authenticated", conn.node_id)
            conn.state = READY
        else:
            self._ready(conn)
        return True

    def _maybe_reauthenticate(self, now_ms: int) -> None:
        """KIP-368: a connection whose re-authentication is due (it takes no new requests since)
        re-authenticates once nothing is in flight on it."""
        for conn in list(self._conns.values()):
            if conn.reauthentication_due(now_ms):
                request, version = conn.begin_reauthentication(now_ms)
                log.debug("node %s: re-authenticating (KIP-368)", conn.node_id)
                self._send_internal(conn, request, version, now_ms)

    def _authentication_failed(
        self, conn: KafkaChannel, now_ms: int, exc: errors.AuthenticationError
    ) -> None:
        # Java logs it at error level too: a configuration problem, not a passing one
        log.error("node %s failed authentication: %s", conn.node_id, exc)
        self._authentication_failures.append((conn.node_id, exc))
        # Java steps the reconnect backoff twice for a refusal (authenticationFailed, then
        # disconnected): the next attempt waits 100 ms (reconnect.backoff.ms 50), not 50
        self._connection_states.failed(conn.node_id, now_ms)
        self._disconnect(conn, now_ms, f"authentication failed: {exc}", exc)

    def take_authentication_failures(self) -> List[Tuple[int, BaseException]]:
        """(node, error) of the authentication failures since the last call."""
        out, self._authentication_failures = self._authentication_failures, []
        return out

    # ------------------------------------------------------------------ closing, completing
    def _disconnect(
        self,
        conn: KafkaChannel,
        now_ms: int,
        reason: str,
        exc: Optional[BaseException],
        timed_out: bool = False,
        requested: bool = False,
    ) -> None:
        if self._conns.get(conn.node_id) is not conn:
            return
        if conn.state == AUTHENTICATING and not isinstance(exc, errors.AuthenticationError):
            lost = conn.authenticator.connection_lost()
            if lost is not None:  # a bare-token exchange: closing is how the broker refuses
                self._authentication_failed(conn, now_ms, lost)
                return
        refused = isinstance(exc, errors.AuthenticationError)  # logged as that, at ERROR
        if conn.state != READY and not requested and not refused:
            # never ready: the user must act (a wrong address, a dead broker, not Kafka)
            self.connection_failures.failed(conn.node_id, conn.host, conn.port, reason, now_ms)
        else:
            level = logging.INFO if conn.state == READY else logging.DEBUG
            if isinstance(exc, errors.CorruptResponseError):
                level = logging.WARNING
            log.log(level, "disconnecting from node %s: %s", conn.node_id, reason)
        del self._conns[conn.node_id]
        self.metrics.connection_closed(now_ms)
        conn.close(self._selector)
        states = self._connection_states
        if conn.state != READY or timed_out:
            states.failed(conn.node_id, now_ms)
        else:
            states.closed(conn.node_id, now_ms)
        if conn.state != CONNECTING:
            states.forget_addresses(conn.node_id)
        failed = list(conn.in_flight)
        pending_no_response = [r for _, r in conn.send_queue if not r.expect_response]
        conn.in_flight.clear()
        conn.send_queue.clear()
        for req in failed + pending_no_response:
            if req.internal:
                continue
            self._completed.append(
                ClientResponse(
                    req,
                    conn.node_id,
                    now_ms,
                    None,
                    disconnected=True,
                    timed_out=timed_out,
                    error=exc,
                )
            )
        if self.metadata_updater is not None:
            auth_error = exc if isinstance(exc, errors.AuthenticationError) else None
            self.metadata_updater.handle_disconnection(conn.node_id, auth_error)
        self._tell_listener(conn.node_id, conn.host, conn.port, False, reason)

    def _tell_listener(self, node_id: int, host: str, port: int, up: bool, reason: str) -> None:
        listener = self.connection_listener
        if listener is not None:
            try:
                listener(node_id, host, port, up, reason)
            except Exception:
                log.exception("error in the connection listener")

    def _complete(self, resp: ClientResponse) -> None:
        cb = resp.request.callback
        if cb is None:
            return
        try:
            cb(resp)
        except Exception:
            log.exception("error in a response callback")

    # ------------------------------------------------------------------ choices
    def least_loaded_node(self, now_ms: int, nodes: List[Any]) -> Optional[Any]:
        """The node with the fewest requests in flight, preferring ready ones (Java's)."""
        best, best_load = None, 2**31
        connecting = None
        candidate = None
        offset = int(self._random() * len(nodes)) if nodes else 0
        for i in range(len(nodes)):
            node = nodes[(offset + i) % len(nodes)]
            conn = self._conns.get(node.id)
            if conn is not None and conn.state == READY:
                if self.is_throttled(node.id, now_ms):
                    continue  # neither ready to send nor connecting (Java leaves it out too)
                load = len(conn.in_flight)
                if load == 0:
                    return node
                if load < best_load and self.can_send_more(node.id):
                    best, best_load = node, load
            elif conn is not None:
                connecting = node
            elif candidate is None and self._connection_states.can_connect(node.id, now_ms):
                candidate = node
        return best or connecting or candidate

    def in_flight_request_count(self, node_id: Optional[int] = None) -> int:
        if node_id is not None:
            conn = self._conns.get(node_id)
            return 0 if conn is None else len(conn.in_flight)
        # (a copy: metrics() asks from another thread while the I/O thread connects)
        return sum(len(c.in_flight) for c in list(self._conns.values()))

    @property
    def connection_count(self) -> int:
        """Connections open or being opened (Java's Selector channels: connection-count)."""
        return len(self._conns)

    def disconnect(self, node_id: int) -> None:
        conn = self._conns.get(node_id)
        if conn is not None:
            reason = "disconnected on request"
            self._disconnect(
                conn, self.time_ms(), reason, errors.NetworkError(reason), requested=True
            )
            completed, self._completed = self._completed, []
            for resp in completed:
                self._complete(resp)

    def _shutdown_gracefully(self, max_wait_s: float = 2.0) -> None:
        """Half-close every idle connection and read until the peer closes: a socket closed with
        unread bytes in its receive buffer sends a reset, and a broker may then drop requests it
        has not processed yet (Tansu answers acks=0 requests: such unread bytes)."""
        socks = []
        for conn in self._conns.values():
            if conn.state != READY or conn.in_flight or conn.send_queue:
                continue
            try:
                conn.sock.shutdown(socket.SHUT_WR)
                socks.append(conn.sock)
            except OSError:
                pass
        deadline = time.monotonic() + max_wait_s
        sel = selectors.DefaultSelector()
        try:
            for sock in socks:
                sel.register(sock, selectors.EVENT_READ)
            while sel.get_map() and time.monotonic() < deadline:
                for key, _ in sel.select(max(0.0, deadline - time.monotonic())):
                    try:
                        data = key.fileobj.recv(RECV_CHUNK)  # type: ignore[union-attr]
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        sel.unregister(key.fileobj)
        finally:
            sel.close()

    def close(self, node_id: Optional[int] = None) -> None:
        if node_id is not None:
            self.disconnect(node_id)
            return
        self._shutdown_gracefully()
        for nid in list(self._conns):
            self.disconnect(nid)
        self._closed = True
        try:
            self._selector.close()
        finally:
            self.waker.close()  # before the descriptor can be reused
            self._wake_r.close()
            self._wake_w.close()
