"""A ``producer_byte_rate`` quota on the producer's client id, set with Kafka's configs tool, on a
broker of its own (Apache Kafka only: Tansu has no quotas).

The broker answers a Produce request over the quota at once, with the time to stay away in
``throttle_time_ms``, and mutes the connection for that time (KIP-219). The producer sends that
broker nothing until the time is up (Java's ``NetworkClient.maybeThrottle``), reports it in
``produce-throttle-time-*``, and every record arrives: the quota slows the producer down, it
fails nothing.

The broker's quota windows are short (two windows of one second, ``quota.window.num`` and
``quota.window.size.seconds``): a new client's first window lets about one window's worth of
bytes through before the first throttle (with the default eleven windows of a second it lets ten
seconds' worth through and then throttles for ten seconds to make up for it), so a few seconds of
sending show the rate the quota holds the producer to. librdkafka runs the same scenario: the
rate it gets is the broker's doing, not the client's."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from typing import Any, Callable, Iterator, List, Tuple

import pytest
from confluent_kafka import Producer as ConfluentProducer

from cproducer import KafkaProducer
from cproducer.network.network_client import ClientRequest, ClientResponse
from tests.integration.readback import assert_delivered, read_back, read_back_java
from tests.tools.apache_kafka import ApacheKafka

pytestmark = pytest.mark.kafka

QUOTA = 200_000  # bytes/s
VALUE = b"q" * 1000


def value(n: int) -> bytes:
    """Record ``n``: as long as VALUE, its number first, so that its order can be checked."""
    return (b"%d-" % n).ljust(len(VALUE), b"q")


SECONDS = 5.0  # of sending at the producer's pace, after the first throttled answer
IN_FLIGHT_BYTES = 100_000  # what the test lets wait unacknowledged (a flush at the end: 0.5 s)


@pytest.fixture(scope="module")
def broker() -> Iterator[ApacheKafka]:
    """(Named as the suite's fixture, so that a failure prints this broker's log.)"""
    with ApacheKafka(
        properties={"quota.window.num": "2", "quota.window.size.seconds": "1"}
    ) as kafka:
        yield kafka


def set_byte_rate(broker: ApacheKafka, client_id: str, rate: int) -> None:
    """kafka-configs.sh --alter --add-config producer_byte_rate=... --entity-type clients"""
    out = broker.run_tool(
        "org.apache.kafka.tools.ConfigCommand",
        "--bootstrap-server", broker.bootstrap_servers,
        "--alter", "--add-config", f"producer_byte_rate={rate}",
        "--entity-type", "clients", "--entity-name", client_id,
    )  # fmt: skip
    assert f"Completed updating config for client {client_id}" in out, out


class Requests:
    """What the producer's network client sent and got back: (monotonic ms, node, API key) per
    request as it goes out, (monotonic ms, node, throttle_time_ms) per answer as it arrives."""

    def __init__(self, producer: KafkaProducer) -> None:
        client = producer._client
        self.now = client.time_ms
        self.sent: List[Tuple[int, int, int]] = []
        self.answers: List[Tuple[int, int, int]] = []
        # the order of the sends and answers: a request sent in the millisecond an answer came
        # may have gone out before it (both on the producer's I/O thread)
        self._events = itertools.count()
        self._sent_order: List[int] = []
        self._answer_order: List[int] = []
        send = client.send

        def recording_send(request: ClientRequest, now_ms: int) -> None:
            self.sent.append((self.now(), request.node_id, request.request.API_KEY))
            self._sent_order.append(next(self._events))
            callback = request.callback

            def on_response(response: ClientResponse) -> None:
                throttle = getattr(response.response, "throttle_time_ms", 0)
                self.answers.append((response.received_ms, response.destination, throttle))
                self._answer_order.append(next(self._events))
                if callback is not None:
                    callback(response)

            request.callback = on_response
            send(request, now_ms)

        client.send = recording_send  # type: ignore[method-assign]

    def sent_while_throttled(self) -> List[Tuple[int, int, int]]:
        """The requests that went out to a node after an answer whose throttle time was still
        running."""
        out = []
        answers = list(zip(self.answers, self._answer_order))
        for (at, node, api_key), i in zip(self.sent, self._sent_order):
            if any(
                j < i and got <= at < got + t for (got, n, t), j in answers if n == node and t > 0
            ):
                out.append((at, node, api_key))
        return out

    @property
    def max_throttle_ms(self) -> int:
        return max((t for _, _, t in self.answers), default=0)


def send_for(
    send: Callable[[int, Callable[[Any], None]], None],
    poll: Callable[[], Any],
    first_throttle_s: Callable[[], float],
) -> Tuple[List[float], float]:
    """Sends records (``send(n, done)`` sends ``value(n)``) as fast as the producer takes them
    (at most IN_FLIGHT_BYTES waiting for their acknowledgement) until SECONDS after the first
    throttled answer; the monotonic times of the acknowledgements, and the time the first
    throttled answer came."""
    acked: List[float] = []
    lock = threading.Lock()
    errors: List[Any] = []

    def done(err: Any) -> None:
        with lock:
            if err is not None:
                errors.append(err)
            acked.append(time.monotonic())

    sent = 0
    deadline = time.monotonic() + 30  # the quota holds the first throttle back a second or so
    while time.monotonic() < deadline:
        send(sent, done)
        sent += 1
        while (sent - len(acked)) * len(VALUE) > IN_FLIGHT_BYTES:
            poll()
            time.sleep(0.002)
        first = first_throttle_s()
        if first and deadline - first > SECONDS:
            deadline = first + SECONDS
    while len(acked) < sent and time.monotonic() < deadline + 30:
        poll()
        time.sleep(0.002)
    assert not errors and len(acked) == sent
    first = first_throttle_s()
    assert first, "the broker never throttled the producer"
    return acked, first


def rate_since(acked: List[float], start: float) -> float:
    """Bytes of values acknowledged per second from ``start`` to the last acknowledgement."""
    after = [t for t in acked if t > start]
    return len(after) * len(VALUE) / (after[-1] - start)


def test_a_producer_over_its_byte_rate_waits_out_each_throttle_and_loses_nothing(
    broker: ApacheKafka, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    client_id = f"quota-{uuid.uuid4().hex[:8]}"
    set_byte_rate(broker, client_id, QUOTA)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, client_id=client_id)
    requests = Requests(p)
    to_s = time.monotonic() - requests.now() / 1000  # the client's ms to time.monotonic()

    def first_throttle_s() -> float:
        return next((at / 1000 + to_s for at, _, t in requests.answers if t > 0), 0.0)

    try:
        acked, first = send_for(
            lambda n, done: p.send(topic, value(n), partition=0, callback=lambda _md, e: done(e)),
            lambda: None,
            first_throttle_s,
        )
        metrics = p.metrics()["producer-metrics"]
    finally:
        p.close(30)
    # KIP-219: no request of any kind went to the broker while it was throttling the producer
    # (before, up to max.in.flight.requests.per.connection of them waited in its muted socket)
    assert requests.sent_while_throttled() == []
    throttled = [t for _, _, t in requests.answers if t > 0]
    assert len(throttled) >= 2
    # Java's produce-throttle-time-* (over the default two 30 s samples: the whole test)
    assert metrics["produce-throttle-time-max"] == requests.max_throttle_ms
    assert metrics["produce-throttle-time-avg"] > 0
    # the quota holds the rate near its value over the seconds since the first throttle
    rate = rate_since(acked, first)
    assert 0.5 * QUOTA < rate < 1.5 * QUOTA, rate
    # every acknowledged record, once, by librdkafka and by Java's KafkaConsumer
    for read in (read_back, read_back_java):
        records = read(broker.bootstrap_servers, topic, 1, len(acked))
        assert_delivered(records, [value(n) for n in range(len(acked))], context=read.__name__)
        assert sorted(r.offset for r in records) == list(range(len(acked)))


def test_librdkafka_over_the_same_quota_is_held_to_the_same_band(
    broker: ApacheKafka, new_topic: Callable[..., str]
) -> None:
    """The same scenario with librdkafka, the check of the rate band above: the broker holds any
    client near the quota (librdkafka reports the throttle times through its throttle_cb)."""
    topic = new_topic(1)
    client_id = f"quota-rdkafka-{uuid.uuid4().hex[:8]}"
    set_byte_rate(broker, client_id, QUOTA)
    throttles: List[Tuple[float, float]] = []
    p = ConfluentProducer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "client.id": client_id,
            "linger.ms": 5,
            "throttle_cb": lambda ev: throttles.append((time.monotonic(), ev.throttle_time)),
        }
    )

    def first_throttle_s() -> float:
        return next((at for at, t in throttles if t > 0), 0.0)

    acked, first = send_for(
        lambda n, done: p.produce(topic, value(n), partition=0, on_delivery=lambda e, _m: done(e)),
        lambda: p.poll(0),
        first_throttle_s,
    )
    p.flush(30)
    rate = rate_since(acked, first)
    assert 0.5 * QUOTA < rate < 1.5 * QUOTA, rate
    records = read_back(broker.bootstrap_servers, topic, 1, len(acked))
    assert_delivered(records, [value(n) for n in range(len(acked))])


def test_a_transaction_over_the_quota_commits_and_waits_out_each_throttle(
    broker: ApacheKafka, new_topic: Callable[..., str]
) -> None:
    """The transaction coordinator is the throttled broker too: AddPartitionsToTxn and EndTxn
    wait for the throttle's end as Produce does (the Sender's poll wakes then: no answer comes
    to wake it), and every transaction commits."""
    topic = new_topic(2)
    client_id = f"quota-txn-{uuid.uuid4().hex[:8]}"
    set_byte_rate(broker, client_id, QUOTA)
    p = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        client_id=client_id,
        transactional_id=f"quota-txn-{uuid.uuid4().hex[:8]}",
    )
    requests = Requests(p)
    per_transaction = 150  # 150 kB: each transaction is throttled
    try:
        p.init_transactions(30)
        for k in range(4):
            p.begin_transaction()
            for i in range(per_transaction):
                p.send(topic, value(k * per_transaction + i), partition=i % 2)
            p.commit_transaction(60)
    finally:
        p.close(30)
    assert requests.max_throttle_ms > 0
    assert requests.sent_while_throttled() == []
    end_txn = [api for _, _, api in requests.sent if api == 26]
    assert len(end_txn) == 4
    records = read_back(
        broker.bootstrap_servers,
        topic,
        2,
        4 * per_transaction,
        config={"isolation.level": "read_committed"},
    )
    n = 4 * per_transaction
    assert_delivered(records, [value(i) for i in range(n)], partitions=[i % 2 for i in range(n)])
