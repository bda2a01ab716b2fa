"""NetworkClient against tiny scripted servers: timeouts, garbage, backoff, in-flight limits."""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import struct
import threading
import time
from typing import Any, Iterator, List, Optional, Tuple

import pytest

from cproducer import errors
from cproducer.cluster import Node
from cproducer.network.cluster_connection_states import ClusterConnectionStates
from cproducer.network.kafka_channel import KafkaChannel
from cproducer.network.network_client import ClientRequest, ConnectionState, NetworkClient
from cproducer.network.selector_wakeup import SelectorWakeup
from cproducer.protocol import MetadataRequest, ProduceRequest, Writer
from cproducer.security.sasl_authenticator import SaslClientAuthenticator
from cproducer.security.sasl_client import PlainClient
from cproducer.utils.time import ManualClock


def api_versions_body(apis: Tuple[Tuple[int, int], ...] = ((0, 9), (3, 12), (18, 3))) -> bytes:
    w = Writer().int16(0)
    w.uvarint(len(apis) + 1)  # compact array
    for key, hi in apis:
        w.int16(key).int16(0).int16(hi).tagged_fields()
    w.int32(0).tagged_fields()
    return w.getvalue()


def read_frame(conn: socket.socket) -> Optional[Tuple[int, int, bytes]]:
    """(api key, correlation id, frame) of the next request; None once the peer closed."""
    head = conn.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    frame = conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
    api_key, _ver, cid = struct.unpack(">hhi", frame[:8])
    return api_key, cid, frame


def answer_api_versions(conn: socket.socket, cid: int, sasl: bool = False) -> None:
    # with SASL: SaslHandshake v1 and SaslAuthenticate v1 (neither flexible)
    apis = ((0, 9), (3, 12), (18, 3)) + (((17, 1), (36, 1)) if sasl else ())
    body = struct.pack(">i", cid) + api_versions_body(apis)
    conn.sendall(struct.pack(">i", len(body)) + body)


def answer(conn: socket.socket, cid: int, body: bytes) -> None:
    conn.sendall(struct.pack(">ii", len(body) + 4, cid) + body)


class ScriptedBroker:
    """Answers ApiVersions properly, then misbehaves on every other request per ``mode``."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(4)
        self.port = self.srv.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        self.srv.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.srv.accept()
            except OSError:
                continue
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        try:
            while not self.stop.is_set():
                got = read_frame(conn)
                if got is None:
                    return
                api_key, cid, _frame = got
                if api_key == 18:
                    answer_api_versions(conn, cid, sasl=self.mode == "sasl_refused")
                elif self.mode == "sasl_refused" and api_key == 17:  # SaslHandshake v1: PLAIN
                    answer(conn, cid, struct.pack(">hih", 0, 1, 5) + b"PLAIN")
                elif self.mode == "sasl_refused" and api_key == 36:  # SaslAuthenticate v1
                    refusal = b"Authentication failed: Invalid username or password"
                    answer(conn, cid, struct.pack(">hh", 58, len(refusal)) + refusal
                           + struct.pack(">iq", 0, 0))  # fmt: skip
                elif self.mode == "silent":
                    continue
                elif self.mode == "bad_length":
                    conn.sendall(struct.pack(">i", -7) + b"xxxx")
                elif self.mode == "wrong_cid":
                    body = struct.pack(">i", cid + 1000) + b"\x00" * 20
                    conn.sendall(struct.pack(">i", len(body)) + body)
                elif self.mode == "truncated":
                    conn.sendall(struct.pack(">i", 100) + struct.pack(">i", cid) + b"\x00" * 10)
                    conn.close()
                    return
                elif self.mode == "garbage_body":
                    body = struct.pack(">i", cid) + b"\x00\x05\xff\xff"
                    conn.sendall(struct.pack(">i", len(body)) + body)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.srv.close()


def run_until(client: NetworkClient, node: Node, done, timeout_s: float = 5.0) -> List:
    out = []
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        client.ready(node, client.time_ms())
        out += client.poll(20, client.time_ms())
    return out


def metadata_request(node: Node, sink: list, timeout_ms: int = 30000) -> ClientRequest:
    return ClientRequest(node.id, MetadataRequest(["t"]), -1, 0, sink.append, timeout_ms, True)


def connect(client: NetworkClient, node: Node) -> None:
    run_until(client, node, lambda: client.is_ready(node, client.time_ms()))
    assert client.is_ready(node, client.time_ms())
    assert client.api_version_for(node.id, MetadataRequest) == 12


@pytest.mark.parametrize("mode", ["bad_length", "wrong_cid", "truncated", "garbage_body"])
def test_garbage_disconnects_with_reason_and_fails_the_request(mode, caplog) -> None:
    srv = ScriptedBroker(mode)
    node = Node(1, "127.0.0.1", srv.port)
    client = NetworkClient("t", request_timeout_ms=5000)
    try:
        connect(client, node)
        sink: List = []
        client.send(metadata_request(node, sink), client.time_ms())
        with caplog.at_level(logging.INFO, logger="cproducer.network.network_client"):
            run_until(client, node, lambda: sink, 5)
        assert len(sink) == 1
        resp = sink[0]
        assert resp.disconnected and resp.response is None
        assert isinstance(resp.error, errors.NetworkError)
        assert any("disconnecting from node 1" in r.message for r in caplog.records)
        assert client.in_flight_request_count() == 0
    finally:
        client.close()
        srv.close()


def test_silent_server_request_times_out_and_connection_closes() -> None:
    srv = ScriptedBroker("silent")
    node = Node(1, "127.0.0.1", srv.port)
    client = NetworkClient("t")
    try:
        connect(client, node)
        sink: List = []
        client.send(metadata_request(node, sink, timeout_ms=200), client.time_ms())
        t0 = time.monotonic()
        run_until(client, node, lambda: sink, 5)
        assert sink and sink[0].timed_out and sink[0].disconnected
        assert 0.15 < time.monotonic() - t0 < 3
        assert isinstance(sink[0].error, errors.RequestTimedOutError)
    finally:
        client.close()
        srv.close()


def test_unreachable_port_reconnect_backoff_grows_with_fake_clock() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    clock = ManualClock()
    client = NetworkClient(
        "t", reconnect_backoff_ms=100, reconnect_backoff_max_ms=1600, clock=clock
    )
    node = Node(1, "127.0.0.1", port)
    delays: List[int] = []
    try:
        for _ in range(6):
            assert not client.ready(node, clock.monotonic_ms())
            deadline = time.monotonic() + 5
            while client.connection_state(node.id) is not ConnectionState.DISCONNECTED:
                client.poll(10, clock.monotonic_ms())
                assert time.monotonic() < deadline
            delay = client.connection_delay(node, clock.monotonic_ms())
            delays.append(delay)
            clock.sleep(delay)
        assert all(80 <= d for d in delays)
        assert delays[-1] > delays[0] * 4  # exponential growth ...
        assert max(delays) <= 1600  # ... up to the cap
    finally:
        client.close()


def test_a_refused_authentication_backs_off_from_the_refusal_as_java_does() -> None:
    """A broker refuses credentials only after connection.failed.authentication.delay.ms
    (here 300 ms of the fake clock): the next attempt still waits its backoff, counted from the
    refusal (Java's ClusterConnectionStates sets lastConnectAttemptMs when the connection
    fails), and the backoff steps twice per refusal, as Java's (authenticationFailed, then
    disconnected): 100 ms then 400 ms (+-20%) for reconnect.backoff.ms=50."""
    srv = ScriptedBroker("sasl_refused")
    node = Node(1, "127.0.0.1", srv.port)
    clock = ManualClock()
    client = NetworkClient(
        "t",
        clock=clock,
        reconnect_backoff_ms=50,
        reconnect_backoff_max_ms=1000,
        sasl_authenticator_factory=lambda node_id: SaslClientAuthenticator(
            "PLAIN", lambda: PlainClient("alice", "wrong-pw"), node_id
        ),
    )
    delays = []
    try:
        for _ in range(2):
            assert client.ready(node, clock.monotonic_ms()) is False
            clock.sleep(300)  # the broker's delay before its refusal
            deadline = time.monotonic() + 5
            while not client.connection_failed(node):
                client.poll(10, clock.monotonic_ms())
                assert time.monotonic() < deadline
            [(node_id, exc)] = client.take_authentication_failures()
            assert node_id == 1 and "Invalid username or password" in str(exc)
            delays.append(client.connection_delay(node, clock.monotonic_ms()))
            assert not client.ready(node, clock.monotonic_ms())  # still backing off
            clock.sleep(delays[-1])
        assert 80 <= delays[0] <= 120 and 320 <= delays[1] <= 480
    finally:
        client.close()
        srv.close()


def test_in_flight_limit_per_connection() -> None:
    srv = ScriptedBroker("silent")
    node = Node(1, "127.0.0.1", srv.port)
    client = NetworkClient("t", max_in_flight_requests_per_connection=2)
    try:
        connect(client, node)
        sink: List = []
        client.send(metadata_request(node, sink), client.time_ms())
        client.poll(0, client.time_ms())
        assert client.can_send_more(node.id)
        client.send(metadata_request(node, sink), client.time_ms())
        client.poll(0, client.time_ms())
        assert not client.can_send_more(node.id) and not client.is_ready(node, client.time_ms())
        assert client.in_flight_request_count(node.id) == 2
        # connected: no delay limit (an answer wakes the poll), as Java's connectionDelay
        assert client.connection_delay(node, client.time_ms()) >= 2**31
        with pytest.raises(errors.IllegalStateError, match="not ready"):
            client.send(ClientRequest(9, MetadataRequest(["t"])), client.time_ms())
    finally:
        client.close()
        srv.close()


def test_wakeup_interrupts_poll() -> None:
    client = NetworkClient("t")
    try:
        threading.Timer(0.05, client.wakeup).start()
        t0 = time.monotonic()
        client.poll(5000, client.time_ms())
        assert time.monotonic() - t0 < 2
    finally:
        client.close()


def _pending_bytes(sock: socket.socket) -> int:
    try:
        return len(sock.recv(4096))
    except BlockingIOError:
        return 0


@contextlib.contextmanager
def _waker() -> Iterator[Tuple[SelectorWakeup, socket.socket]]:
    """A SelectorWakeup over a non-blocking socket pair, and the pair's reading end."""
    r, w = socket.socketpair()
    r.setblocking(False)
    w.setblocking(False)
    try:
        yield SelectorWakeup(w), r
    finally:
        r.close()
        w.close()


def test_selector_wakeup_writes_only_to_a_poller_that_may_block() -> None:
    with _waker() as (waker, r):
        # the poller is busy: a flag, no byte, however many wake-ups
        waker.wakeup()
        waker.wakeup()
        assert waker.requested and _pending_bytes(r) == 0
        # the poller sees it before select (and then polls without blocking)
        assert waker.begin_select() is True
        assert not waker.requested
        # in select: the first wake-up writes one byte, the next ones nothing until drained
        waker.wakeup()
        waker.wakeup()
        assert waker.signalled and _pending_bytes(r) == 1
        waker.end_select()
        waker.drained()
        assert waker.begin_select() is True  # the wake-ups also left the flag for the next poll
        assert waker.begin_select() is False
        waker.wakeup()
        assert _pending_bytes(r) == 1  # drained: a wake-up in select writes again
        waker.end_select()
        waker.drained()
        waker.close()  # the pipe is closing: its descriptor may be reused, nothing is written
        waker.begin_select()
        waker.wakeup()
        assert waker.requested and _pending_bytes(r) == 0


def test_data_wakeups_are_silent_while_muted_and_explicit_ones_are_not() -> None:
    with _waker() as (waker, r):
        # not muted: an append's wake-up is a wake-up
        waker.begin_select()
        waker.wakeup_for_data()
        assert _pending_bytes(r) == 1
        waker.end_select()
        waker.drained()
        waker.begin_select()  # (takes the flag that wake-up left)
        # muted (the Sender can send nothing until an answer): neither a byte nor the flag
        waker.data_muted = True
        waker.wakeup_for_data()
        assert not waker.requested and _pending_bytes(r) == 0
        # flush, close, transactions and metadata still wake it
        waker.wakeup()
        assert _pending_bytes(r) == 1
        # select returned: the mute ends with it (the poller reads the accumulator anyway)
        waker.end_select()
        assert not waker.data_muted
        waker.drained()
        waker.wakeup_for_data()
        assert waker.requested


def test_data_wakeups_are_muted_only_when_every_broker_is_at_its_in_flight_limit() -> None:
    srv = ScriptedBroker("silent")
    one, two = Node(1, "127.0.0.1", srv.port), Node(2, "127.0.0.1", srv.port)
    client = NetworkClient("t", max_in_flight_requests_per_connection=1)
    try:
        client.mute_data_wakeups([])  # no broker known yet
        assert not client.waker.data_muted
        connect(client, one)
        sink: List = []
        client.send(metadata_request(one, sink), client.time_ms())
        client.poll(0, client.time_ms())
        client.mute_data_wakeups([one])
        assert client.waker.data_muted
        client.waker.end_select()
        # another broker, not connected: its connecting is work no answer announces
        client.mute_data_wakeups([one, two])
        assert not client.waker.data_muted
        connect(client, two)
        client.mute_data_wakeups([one, two])  # connected, nothing in flight: it can take more
        assert not client.waker.data_muted
        client.send(metadata_request(two, sink), client.time_ms())
        client.poll(0, client.time_ms())
        client.mute_data_wakeups([one, two])
        assert client.waker.data_muted
    finally:
        client.close()
        srv.close()


class RecordingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The platform's selector, remembering the timeout of each select."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: List[Optional[float]] = []

    def select(self, timeout: Optional[float] = None) -> Any:
        self.timeouts.append(timeout)
        return super().select(timeout)


def test_a_wakeup_before_poll_is_not_lost() -> None:
    client = NetworkClient("t", selector=RecordingSelector)
    sel = client._selector
    try:
        client.wakeup()  # no poll running: only the flag
        assert client.waker.requested and not client.waker.signalled
        client.poll(5000, client.time_ms())
        client.poll(50, client.time_ms())
        # the wake-up made the first poll not block, and only the first
        assert sel.timeouts == [0.0, 0.05]
        assert not client.waker.requested and not client.waker.selecting
    finally:
        client.close()


def test_a_wall_clock_step_times_out_no_request() -> None:
    srv = ScriptedBroker("silent")
    node = Node(1, "127.0.0.1", srv.port)
    clock = ManualClock()
    client = NetworkClient("t", clock=clock)
    try:
        connect(client, node)
        sink: List = []
        client.send(metadata_request(node, sink, timeout_ms=200), client.time_ms())
        clock.step_wall_clock(3_600_000)  # an hour forward, then an hour back
        client.poll(0, client.time_ms())
        clock.step_wall_clock(-7_200_000)
        client.poll(0, client.time_ms())
        assert not sink and client.in_flight_request_count(node.id) == 1
        clock.sleep(200)  # time itself passes: now it is late
        client.poll(0, client.time_ms())
        assert sink and sink[0].timed_out
    finally:
        client.close()
        srv.close()


def test_an_idle_connection_is_closed_after_connections_max_idle_ms() -> None:
    srv = ScriptedBroker("silent")
    node = Node(1, "127.0.0.1", srv.port)
    clock = ManualClock()
    client = NetworkClient("t", clock=clock, connections_max_idle_ms=1000, request_timeout_ms=5000)
    try:
        connect(client, node)
        clock.sleep(999)
        client.poll(0, client.time_ms())
        assert client.connection_state(node.id) is ConnectionState.READY
        sink: List = []
        client.send(metadata_request(node, sink), client.time_ms())
        clock.sleep(4000)  # a request in flight: the connection is not idle
        client.poll(0, client.time_ms())
        assert client.connection_state(node.id) is ConnectionState.READY and not sink
        client.disconnect(node.id)  # fails the request; connect again and stay idle
        assert sink and sink[0].disconnected
        clock.sleep(10_000)  # past the reconnect backoff
        connect(client, node)
        clock.sleep(1000)
        client.poll(0, client.time_ms())
        assert client.connection_state(node.id) is ConnectionState.DISCONNECTED
        assert client.connection_delay(node, client.time_ms()) > 0  # reconnects when asked
    finally:
        client.close()
        srv.close()


def test_a_request_the_socket_cannot_take_at_once_goes_out_whole_and_in_order() -> None:
    # a reader that waits, then frames larger than the socket buffers: each is written in
    # several pieces (the send queue keeps what is left of each part, writability resumes it)
    frames: List[bytes] = []
    release = threading.Event()
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            while True:
                got = read_frame(conn)
                if got is None:
                    return
                api_key, cid, frame = got
                if api_key == 18:
                    answer_api_versions(conn, cid)
                    release.wait(10)  # then read nothing until both requests are queued
                    continue
                frames.append(frame)

    threading.Thread(target=serve, daemon=True).start()
    node = Node(1, "127.0.0.1", srv.getsockname()[1])
    client = NetworkClient("t", send_buffer_bytes=65536)
    payloads = [bytes([i]) * 700_000 + os.urandom(300_000) for i in range(4)]
    try:
        connect(client, node)
        requests = [
            ClientRequest(
                node.id,
                ProduceRequest(
                    1,
                    1000,
                    {"t": [(0, memoryview(payloads[2 * k])), (1, memoryview(payloads[2 * k + 1]))]},
                ),
                3,
                expect_response=False,
            )
            for k in range(2)
        ]
        for r in requests:
            client.send(r, client.time_ms())
        assert requests[0].unsent > 0  # the first write did not take the whole frame
        release.set()
        deadline = time.monotonic() + 10
        while len(frames) < 2 and time.monotonic() < deadline:
            client.poll(20, client.time_ms())
        assert len(frames) == 2
        for k, frame in enumerate(frames):
            first, second = payloads[2 * k], payloads[2 * k + 1]
            at = frame.find(first)
            assert at > 0 and frame.find(second, at + len(first)) > at  # whole, in order
            assert len(frame) + 4 == requests[k].size_bytes
            assert struct.unpack(">i", frame[4:8])[0] == requests[k].correlation_id
        assert all(r.unsent == 0 for r in requests)
    finally:
        client.close()
        srv.close()


class ThrottlingBroker:
    """Answers each Metadata request (v12) at once with ``throttle_ms`` as its throttle time, as
    a broker does under a quota (KIP-219), and keeps the answers of the requests named in
    ``hold`` (their correlation ids, in order) until ``release`` is set."""

    def __init__(self, throttle_ms: int) -> None:
        self.throttle_ms = throttle_ms
        self.requests: List[int] = []  # correlation ids of the Metadata requests received
        self.release = threading.Event()
        self.hold = 0  # how many requests after the first wait for release
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(1)
        self.port = self.srv.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def metadata_answer(self, conn: socket.socket, cid: int) -> None:
        # response header v1 (tagged fields), then throttle_time_ms, no brokers, a null
        # cluster id, controller -1, no topics, tagged fields
        body = b"\x00" + struct.pack(">i", self.throttle_ms) + b"\x01\x00"
        answer(conn, cid, body + struct.pack(">i", -1) + b"\x01\x00")

    def serve(self) -> None:
        conn, _ = self.srv.accept()
        with conn:
            while True:
                got = read_frame(conn)
                if got is None:
                    return
                api_key, cid, _frame = got
                if api_key == 18:
                    answer_api_versions(conn, cid)
                    continue
                self.requests.append(cid)
                if 1 < len(self.requests) <= 1 + self.hold:
                    self.release.wait(10)
                self.metadata_answer(conn, cid)

    def close(self) -> None:
        self.release.set()
        self.srv.close()


def test_a_throttled_answer_holds_the_nodes_requests_back_until_its_throttle_time_ends() -> None:
    # KIP-219: the broker answered at once with a throttle time and muted the connection; the
    # client sends nothing to that node until the time is up (Java's maybeThrottle)
    srv = ThrottlingBroker(throttle_ms=500)
    node = Node(1, "127.0.0.1", srv.port)
    clock = ManualClock()
    client = NetworkClient("t", clock=clock, reconnect_backoff_ms=50)
    try:
        connect(client, node)
        sink: List = []
        client.send(metadata_request(node, sink), client.time_ms())
        run_until(client, node, lambda: sink)
        assert sink[0].response.throttle_time_ms == 500
        now = client.time_ms()
        assert not client.is_ready(node, now) and not client.ready(node, now)
        assert not client.can_send_more(node.id)
        assert client.is_throttled(node.id, now) and client.throttle_delay(node.id, now) == 500
        # the Sender's poll wakes when the throttle ends: no I/O announces it
        assert client.connection_delay(node, now) == 500
        assert client.least_loaded_node(now, [node]) is None
        clock.sleep(499)
        assert not client.is_ready(node, client.time_ms())
        assert client.connection_delay(node, client.time_ms()) == 1
        clock.sleep(1)
        now = client.time_ms()
        assert client.is_ready(node, now) and client.can_send_more(node.id)
        assert client.throttle_delay(node.id, now) == 0
        assert client.connection_delay(node, now) >= 2**31
        assert client.least_loaded_node(now, [node]) is node
        client.send(metadata_request(node, sink), now)
        run_until(client, node, lambda: len(sink) == 2)
        assert len(srv.requests) == 2
    finally:
        client.close()
        srv.close()


def test_an_answer_below_the_client_throttling_version_does_not_throttle() -> None:
    # before KIP-219's versions (Metadata v6) the broker delayed the answer itself
    srv = ThrottlingBroker(throttle_ms=500)
    node = Node(1, "127.0.0.1", srv.port)
    client = NetworkClient("t", clock=ManualClock())
    try:
        connect(client, node)
        sink: List = []
        request = ClientRequest(node.id, MetadataRequest(["t"]), 5, 0, sink.append, 30000, True)
        # a v5 answer: throttle time, no brokers, a null cluster id, controller -1, no topics
        srv.metadata_answer = lambda conn, cid: answer(  # type: ignore[method-assign]
            conn, cid, struct.pack(">i", 500) + struct.pack(">i", 0) + struct.pack(">hi", -1, -1)
            + struct.pack(">i", 0)
        )  # fmt: skip
        client.send(request, client.time_ms())
        run_until(client, node, lambda: sink)
        assert sink[0].response.throttle_time_ms == 500
        assert client.is_ready(node, client.time_ms())
        assert not client.is_throttled(node.id, client.time_ms())
    finally:
        client.close()
        srv.close()


def test_the_throttle_time_does_not_count_toward_the_timeout_of_requests_in_flight() -> None:
    # Java's InFlightRequests.incrementThrottleTime: the broker holds them while it is muted
    srv = ThrottlingBroker(throttle_ms=1000)
    srv.hold = 1
    node = Node(1, "127.0.0.1", srv.port)
    clock = ManualClock()
    client = NetworkClient("t", clock=clock, max_in_flight_requests_per_connection=2)
    try:
        connect(client, node)
        first: List = []
        second: List = []
        client.send(metadata_request(node, first, timeout_ms=30000), client.time_ms())
        client.send(metadata_request(node, second, timeout_ms=700), client.time_ms())
        run_until(client, node, lambda: first)  # answered, throttled 1000 ms
        assert client.is_throttled(node.id, client.time_ms())
        clock.sleep(1500)  # past the second's own 700 ms, within 700 + 1000
        client.poll(0, client.time_ms())
        assert not second and client.in_flight_request_count(node.id) == 1
        srv.release.set()
        run_until(client, node, lambda: second)
        assert second[0].response is not None and not second[0].timed_out
    finally:
        client.close()
        srv.close()


def test_connection_states_back_off_per_node_and_start_over_once_ready() -> None:
    # random 0.5: the jitter factor is exactly 1
    states = ClusterConnectionStates(100, 1600, 1000, 8000, lambda: 0.5, lambda host: ["10.0.0.1"])
    assert states.can_connect(1, 0) and states.connection_delay(1, 0) == 0
    assert states.setup_timeout_ms(1) == 1000  # a node never tried: the configured timeout
    states.connecting(1, "h", 0)
    states.start_setup_timer(1)
    assert states.setup_timeout_ms(1) == 1000
    for expected in (100, 200, 400):
        states.failed(1, 5000)  # counted from the failure, not from the attempt
        assert states.has_failed(1)
        assert states.connection_delay(1, 5000) == expected
        assert not states.can_connect(1, 5000 + expected - 1) and states.can_connect(
            1, 5000 + expected
        )
    states.start_setup_timer(1)
    assert states.setup_timeout_ms(1) == 8000  # three failures: 1000 * 2**3, the cap
    assert states.connection_delay(2, 5000) == 0  # another node has its own backoff
    states.ready(1)
    assert not states.has_failed(1)
    states.closed(1, 9000)  # a ready connection lost: the base backoff
    assert states.connection_delay(1, 9000) == 100


def test_connection_states_keep_the_longest_throttle_time() -> None:
    states = ClusterConnectionStates(50, 1000, 1000, 1000, lambda: 0.5, lambda host: [])
    assert not states.is_throttled(1, 0) and states.throttle_delay(1, 0) == 0
    states.throttle(1, 500)
    states.throttle(1, 300)  # an earlier end does not shorten it
    assert states.is_throttled(1, 499) and states.throttle_delay(1, 200) == 300
    assert not states.is_throttled(1, 500) and states.throttle_delay(1, 600) == 0


def test_connection_states_try_each_address_in_turn() -> None:
    states = ClusterConnectionStates(50, 1000, 1000, 1000, lambda: 0.5, lambda host: ["a", "b"])
    assert states.connecting(1, "h", 0).current() == "a"
    assert states.connecting(1, "h", 10).current() == "b"
    assert states.connecting(1, "h", 20).current() == "a"  # resolved again, past the last
    assert states.connecting(1, "other", 30).host == "other"  # a node moved to another host


class ScriptedSocket:
    """Takes at most ``takes`` bytes per sendmsg (then raises ``fail``), answers recv_into from
    ``incoming``."""

    def __init__(self, takes: List[int], fail: Optional[OSError] = None) -> None:
        self.takes = takes
        self.fail = fail
        self.sent = b""
        self.incoming = b""

    def sendmsg(self, views: List[memoryview]) -> int:
        if not self.takes:
            if self.fail is not None:
                raise self.fail
            raise BlockingIOError
        data = b"".join(bytes(v) for v in views)[: self.takes.pop(0)]
        self.sent += data
        return len(data)

    def recv_into(self, buffer: bytearray) -> int:
        if not self.incoming:
            raise BlockingIOError
        n = min(len(buffer), len(self.incoming))
        buffer[:n], self.incoming = self.incoming[:n], self.incoming[n:]
        return n


def acks0_request(cid: int, payload: bytes) -> ClientRequest:
    request = ClientRequest(1, ProduceRequest(0, 1000, {"t": [(0, memoryview(payload))]}), 3)
    request.expect_response = False
    request.correlation_id = cid
    return request


def test_a_channel_reports_each_request_written_whole_before_a_send_fails() -> None:
    sock = ScriptedSocket([], fail=ConnectionResetError(104, "reset"))
    channel = KafkaChannel(1, "h", 9092, sock, 0)
    first, second = acks0_request(7, b"x" * 100), acks0_request(8, b"y" * 100)
    for request in (first, second):
        channel.enqueue(request, "t")
    sock.takes = [first.size_bytes - 10, 10]  # the first in two pieces; the second fails
    written: List[ClientRequest] = []
    with pytest.raises(ConnectionResetError):
        for _ in range(2):  # the first call stops where the socket is full
            channel.write(5, lambda ch, request, now_ms: written.append(request))
    # the caller completes the acks=0 request that did go out before closing the channel
    assert written == [first] and first.unsent == 0 and second.unsent == -1
    assert len(sock.sent) == first.size_bytes and list(channel.unanswered) == [7]
    assert channel.last_activity_ms == 5


def test_a_channel_hands_over_whole_frames_in_turn_and_keeps_a_partial_one() -> None:
    sock = ScriptedSocket([])
    channel = KafkaChannel(1, "h", 9092, sock, 0)
    sock.incoming = struct.pack(">i", 4) + b"abcd" + struct.pack(">i", 5) + b"efghi" + b"\x00\x00"
    buffer = bytearray(1024)
    assert channel.read(buffer, memoryview(buffer))
    seen: List[bytes] = []

    def handle(ch: KafkaChannel, frame: memoryview, now_ms: int) -> bool:
        seen.append(bytes(frame))
        return True

    assert channel.handle_frames(100, handle, 0) is None
    assert seen == [b"abcd", b"efghi"] and bytes(channel.recv) == b"\x00\x00"
    channel.recv += struct.pack(">i", 1000)[2:] + b"x"  # a length above the largest answer
    error = channel.handle_frames(100, handle, 0)
    assert isinstance(error, errors.CorruptResponseError) and "1000" in str(error)
