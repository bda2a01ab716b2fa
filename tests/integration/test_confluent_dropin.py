"""Programs that handle trouble as confluent-kafka's documentation teaches, run on
``confluent_kafka`` and on the facade (``client``): purge, a queue that fills part-way through
``produce_batch``, ``error_cb`` on a refused connection, ``produce()`` outside a transaction,
``flush(timeout)``'s count. Passing with ``confluent_kafka`` shows each test states librdkafka's
behaviour. What we wrote is read back by librdkafka."""

from __future__ import annotations

import threading
import time
import uuid
from types import ModuleType
from typing import Any, Callable, Dict, Iterator, List, Tuple

import confluent_kafka
import pytest

import cproducer.compat.confluent as facade
from cproducer.localbroker import LocalBroker, free_port
from tests.integration.readback import assert_delivered, read_back
from tests.tools.apache_kafka import ApacheKafka
from tests.tools.sasl_front import SaslFront

CLIENTS = [pytest.param(confluent_kafka, id="confluent_kafka"), pytest.param(facade, id="facade")]


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest) -> ModuleType:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def tansu_topic(tansu_broker: LocalBroker) -> Callable[..., str]:
    def make(partitions: int = 1) -> str:
        name = f"dropin-{uuid.uuid4().hex[:10]}"
        tansu_broker.create_topic(name, partitions)
        return name

    return make


class Reports:
    """A delivery callback recording (error code or None, value) per report."""

    def __init__(self) -> None:
        self.items: List[Tuple[Any, Any]] = []

    def __call__(self, err: Any, msg: Any) -> None:
        self.items.append((None if err is None else err.code(), msg.value()))

    def codes(self) -> List[Any]:
        return [code for code, _ in self.items]


_made: List[Any] = []


@pytest.fixture(autouse=True)
def _close_producers() -> Iterator[None]:
    """No producer outlives its test (reconnecting to a broker gone at the session's end)."""
    yield
    while _made:
        p = _made.pop()
        try:
            p.purge()
        except RuntimeError:
            continue  # closed by the test
        p.close(5)


def _producer(client: ModuleType, bootstrap: str, **conf: Any) -> Any:
    config: Dict[str, Any] = {"bootstrap.servers": bootstrap}
    config.update({k.replace("_", "."): v for k, v in conf.items()})
    p = client.Producer(config)
    _made.append(p)
    return p


def _warm(p: Any, topic: str) -> None:
    """Metadata known and a connection open: what follows is queued for a known partition."""
    p.produce(topic, b"warm-up")
    assert p.flush(30) == 0


def _serve(p: Any, reports: Reports, count: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while len(reports.items) < count and time.monotonic() < deadline:
        p.poll(0.05)


# ------------------------------------------------------------------ purge


def test_purge_frees_the_queue_then_flush_and_produce_again(
    client: ModuleType, tansu_broker: LocalBroker, tansu_topic: Callable[..., str]
) -> None:
    topic = tansu_topic()
    p = _producer(
        client,
        tansu_broker.bootstrap_servers,
        linger_ms=10000,  # queued until purged or flushed
        queue_buffering_max_messages=5,
        message_timeout_ms=20000,
    )
    _warm(p, topic)
    reports = Reports()
    for i in range(5):
        p.produce(topic, b"purged-%d" % i, on_delivery=reports)
    with pytest.raises(BufferError):
        p.produce(topic, b"refused", on_delivery=reports)
    assert len(p) >= 5
    # blocking=False: confluent-kafka 2.16 inverts the flag, and its default (non-blocking)
    # purge may still catch messages produced after it; the facade's purge is done at return
    p.purge(in_flight=False, blocking=False)
    # "call poll() or flush() afterwards to serve the delivery report callbacks": flush serves
    # them and counts none as still queued
    assert p.flush(10) == 0
    assert reports.codes() == [client.KafkaError._PURGE_QUEUE] * 5
    assert len(p) == 0
    # the queue takes as many again, and they are delivered
    for i in range(5):
        p.produce(topic, b"kept-%d" % i, on_delivery=reports)
    assert p.flush(30) == 0
    assert reports.codes()[5:] == [None] * 5
    records = read_back(tansu_broker.bootstrap_servers, topic, 1, 6)
    # a purged or refused message is never written: it would be one not sent
    assert_delivered(records, [b"warm-up"] + [b"kept-%d" % i for i in range(5)])


def test_purge_frees_the_bytes_of_the_queue(
    client: ModuleType, tansu_broker: LocalBroker, tansu_topic: Callable[..., str]
) -> None:
    topic = tansu_topic()
    p = _producer(
        client, tansu_broker.bootstrap_servers, linger_ms=60000, queue_buffering_max_kbytes=1
    )
    _warm(p, topic)
    reports = Reports()
    for i in range(3):
        p.produce(topic, b"%d" % i * 300, on_delivery=reports)
    with pytest.raises(BufferError):
        p.produce(topic, b"x" * 300)
    p.purge(in_flight=False, blocking=False)
    _serve(p, reports, 3)
    assert reports.codes() == [client.KafkaError._PURGE_QUEUE] * 3
    assert len(p) == 0 and p.flush(0) == 0
    for _ in range(3):
        p.produce(topic, b"y" * 300, on_delivery=reports)
    assert p.flush(30) == 0 and reports.codes()[3:] == [None] * 3


def test_flush_counts_the_queue_and_purge_empties_it(
    client: ModuleType, tansu_broker: LocalBroker, tansu_topic: Callable[..., str]
) -> None:
    topic = tansu_topic()
    p = _producer(client, tansu_broker.bootstrap_servers, linger_ms=60000)
    _warm(p, topic)
    reports = Reports()
    for i in range(7):
        p.produce(topic, b"%d" % i, on_delivery=reports)
    # flush() makes them sendable at once: stop the sending first to count them queued
    p.purge(in_queue=False)  # nothing in flight: a no-op
    assert len(p) >= 7
    p.purge()
    assert p.flush(5) == 0 and len(p) == 0
    assert reports.codes() == [client.KafkaError._PURGE_QUEUE] * 7


def test_flush_timeout_returns_what_is_still_queued(client: ModuleType) -> None:
    # nobody listens: nothing leaves the queue
    p = _producer(client, f"127.0.0.1:{free_port()}")
    reports = Reports()
    for i in range(4):
        p.produce("nowhere", b"%d" % i, on_delivery=reports)
    assert p.flush(0.2) == 4
    p.purge()
    assert p.flush(5) == 0
    assert reports.codes() == [client.KafkaError._PURGE_QUEUE] * 4


def test_purge_in_flight_reports_once_and_the_request_still_lands(
    client: ModuleType, kafka_broker: ApacheKafka
) -> None:
    """librdkafka fails the messages of a sent, unanswered ProduceRequest with _PURGE_INFLIGHT
    at once; the request itself was written and the broker still appends it. Its late answer
    reports nothing more."""
    topic = f"dropin-inflight-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 1)
    p = _producer(
        client,
        kafka_broker.bootstrap_servers,
        linger_ms=0,
        request_timeout_ms=30000,
        message_timeout_ms=60000,
    )
    _warm(p, topic)
    reports = Reports()
    kafka_broker.node.pause()
    try:
        for i in range(5):
            p.produce(topic, b"in-flight-%d" % i, on_delivery=reports)
        time.sleep(1.0)  # sent; the answer cannot come
        p.purge(in_queue=False)
        _serve(p, reports, 5)
        assert reports.codes() == [client.KafkaError._PURGE_INFLIGHT] * 5
        assert len(p) == 0
    finally:
        kafka_broker.node.resume()
    values = [r.value for r in read_back(kafka_broker.bootstrap_servers, topic, 1, 6)]
    assert values == [b"warm-up"] + [b"in-flight-%d" % i for i in range(5)]
    p.produce(topic, b"after", on_delivery=reports)
    assert p.flush(30) == 0
    assert reports.codes() == [client.KafkaError._PURGE_INFLIGHT] * 5 + [None]  # one each


# ------------------------------------------------------------------ produce_batch


def test_produce_batch_takes_what_fits_and_marks_the_rest(
    client: ModuleType, tansu_broker: LocalBroker, tansu_topic: Callable[..., str]
) -> None:
    topic = tansu_topic()
    p = _producer(
        client, tansu_broker.bootstrap_servers, linger_ms=100, queue_buffering_max_messages=5
    )
    _warm(p, topic)
    reports = Reports()
    messages: List[Dict[str, Any]] = [{"value": b"m-%d" % i} for i in range(8)]
    assert p.produce_batch(topic, messages, on_delivery=reports) == 5
    assert not any("_error" in m for m in messages[:5])
    for m in messages[5:]:
        err = m["_error"]
        assert isinstance(err, client.KafkaError)
        assert err.code() == client.KafkaError._QUEUE_FULL
        assert err.str() == "Message failed: Local: Queue full"
    assert p.flush(30) == 0
    assert sorted(reports.items) == [(None, b"m-%d" % i) for i in range(5)]
    records = read_back(tansu_broker.bootstrap_servers, topic, 1, 6)
    assert_delivered(records, [b"warm-up"] + [b"m-%d" % i for i in range(5)])


def test_produce_batch_refuses_the_rest_once_the_queue_was_full(
    client: ModuleType, tansu_broker: LocalBroker, tansu_topic: Callable[..., str]
) -> None:
    # librdkafka stops at the first _QUEUE_FULL: a smaller message after it is refused too
    topic = tansu_topic()
    p = _producer(
        client, tansu_broker.bootstrap_servers, linger_ms=100, queue_buffering_max_kbytes=1
    )
    _warm(p, topic)
    reports = Reports()
    messages: List[Dict[str, Any]] = [
        {"value": b"a" * 600},
        {"value": b"b" * 600},
        {"value": b"c" * 100},
    ]
    assert p.produce_batch(topic, messages, on_delivery=reports) == 1
    assert [m["_error"].code() for m in messages[1:]] == [client.KafkaError._QUEUE_FULL] * 2
    assert p.flush(30) == 0
    assert reports.items == [(None, b"a" * 600)]


# ------------------------------------------------------------------ error_cb


def test_error_cb_runs_in_the_polling_thread(client: ModuleType) -> None:
    port = free_port()  # closed: every connection is refused
    calls: List[Tuple[int, Any]] = []
    p = client.Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "error_cb": lambda err: calls.append((threading.get_ident(), err)),
        }
    )
    _made.append(p)
    deadline = time.monotonic() + 15
    while not calls and time.monotonic() < deadline:
        p.poll(0.1)
    assert calls
    p.flush(0.5)
    assert {ident for ident, _ in calls} == {threading.get_ident()}
    codes = {err.code() for _, err in calls}
    assert codes <= {client.KafkaError._TRANSPORT, client.KafkaError._ALL_BROKERS_DOWN}


# ------------------------------------------------------------------ transactions


def test_produce_outside_a_transaction_is_refused_and_the_producer_goes_on(
    client: ModuleType, kafka_broker: ApacheKafka
) -> None:
    topic = f"dropin-txn-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 1)
    p = _producer(
        client, kafka_broker.bootstrap_servers, transactional_id=f"dropin-{uuid.uuid4().hex[:8]}"
    )
    p.init_transactions(30)
    reports = Reports()
    with pytest.raises(client.KafkaException) as info:
        p.produce(topic, b"outside", on_delivery=reports)
    assert info.value.args[0].code() == client.KafkaError._STATE
    assert len(p) == 0
    messages: List[Dict[str, Any]] = [{"value": b"batch-outside"}] * 2
    messages = [dict(m) for m in messages]
    assert p.produce_batch(topic, messages, on_delivery=reports) == 0
    for m in messages:
        assert m["_error"].code() == client.KafkaError._STATE
        assert m["_error"].str() == "Message failed: Local: Erroneous state"
    p.begin_transaction()
    p.produce(topic, b"inside", on_delivery=reports)
    p.commit_transaction(30)
    assert reports.items == [(None, b"inside")]
    records = read_back(
        kafka_broker.bootstrap_servers,
        topic,
        1,
        1,
        config={"isolation.level": "read_committed"},
    )
    assert [r.value for r in records] == [b"inside"]


def test_purge_under_load_reports_each_message_once(
    client: ModuleType, tansu_broker: LocalBroker, tansu_topic: Callable[..., str]
) -> None:
    """A purge while batches are being sent: each message gets one report, delivered or
    purged; what was purged from the queue never reaches the broker, what was purged in flight
    does (its request was written)."""
    topic = tansu_topic(3)
    # full batches of 50 go at once; the last, partial ones linger 20 ms: purge catches them
    p = _producer(client, tansu_broker.bootstrap_servers, linger_ms=20, batch_num_messages=50)
    _warm(p, topic)
    reports = Reports()
    count = 3000
    for i in range(count):
        p.produce(topic, b"%d" % i, key=b"%d" % (i % 11), on_delivery=reports)
        if i == count // 2:
            p.poll(0)
    p.purge(blocking=False)
    assert p.flush(30) == 0 and len(p) == 0
    assert sorted(int(v) for _, v in reports.items) == list(range(count))
    by_code: Dict[Any, set] = {}
    for code, v in reports.items:
        by_code.setdefault(code, set()).add(v)
    kinds = {None, client.KafkaError._PURGE_QUEUE, client.KafkaError._PURGE_INFLIGHT}
    assert set(by_code) <= kinds, by_code.keys()
    queued = by_code.get(client.KafkaError._PURGE_QUEUE, set())
    assert queued
    written = by_code.get(None, set()) | by_code.get(client.KafkaError._PURGE_INFLIGHT, set())
    records = read_back(tansu_broker.bootstrap_servers, topic, 3, len(written) + 1)
    assert {r.value for r in records} == written | {b"warm-up"}
    sent = [b"warm-up"] + [b"%d" % i for i in range(count)]
    assert_delivered(records, sent, may_be_missing=queued)


def test_close_aborts_the_open_transaction(client: ModuleType, kafka_broker: ApacheKafka) -> None:
    """confluent-kafka's close() aborts a transaction still open: its messages are reported
    purged, and read_committed readers are not held up until the transaction times out."""
    topic = f"dropin-close-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 1)
    reports = Reports()
    p = _producer(
        client,
        kafka_broker.bootstrap_servers,
        transactional_id=f"open-{uuid.uuid4().hex[:8]}",
        linger_ms=20000,  # queued when close() comes
    )
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"left-open", on_delivery=reports)
    p.close()
    assert reports.codes() == [client.KafkaError._PURGE_QUEUE]
    q = _producer(
        client, kafka_broker.bootstrap_servers, transactional_id=f"next-{uuid.uuid4().hex[:8]}"
    )
    q.init_transactions(30)
    q.begin_transaction()
    q.produce(topic, b"committed")
    q.commit_transaction(30)
    q.close()
    records = read_back(
        kafka_broker.bootstrap_servers,
        topic,
        1,
        1,
        timeout_s=15,
        config={"isolation.level": "read_committed"},
    )
    assert [r.value for r in records] == [b"committed"]


def test_a_transaction_with_purged_messages_must_be_aborted(
    client: ModuleType, kafka_broker: ApacheKafka
) -> None:
    """librdkafka refuses to commit a transaction one of whose messages failed delivery (here:
    purged): an abortable _INCONSISTENT error; abort, and the next transaction commits."""
    topic = f"dropin-txn-purge-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, 1)
    p = _producer(
        client,
        kafka_broker.bootstrap_servers,
        transactional_id=f"purge-{uuid.uuid4().hex[:8]}",
        linger_ms=20000,  # queued when purged
    )
    p.init_transactions(30)
    p.begin_transaction()
    reports = Reports()
    for i in range(3):
        p.produce(topic, b"purged-%d" % i, on_delivery=reports)
    p.purge(blocking=False)
    with pytest.raises(client.KafkaException) as info:
        p.commit_transaction(30)
    err = info.value.args[0]
    assert err.code() == client.KafkaError._INCONSISTENT and err.txn_requires_abort()
    assert "3 message(s) failed delivery" in err.str()
    assert reports.codes() == [client.KafkaError._PURGE_QUEUE] * 3
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"committed", on_delivery=reports)
    p.commit_transaction(30)
    assert reports.codes()[3:] == [None]
    records = read_back(
        kafka_broker.bootstrap_servers, topic, 1, 1, config={"isolation.level": "read_committed"}
    )
    assert [r.value for r in records] == [b"committed"]


# ------------------------------------------------------------------ SASL credentials


@pytest.fixture(scope="module")
def sasl_front() -> Iterator[SaslFront]:
    """A Tansu broker behind a SASL front that advertises the front's port."""
    port = free_port()
    with LocalBroker(advertised_port=port) as upstream:
        with SaslFront(upstream.bootstrap_servers, users={"alice": "right-pw"}, port=port) as f:
            f.create_topic = upstream.create_topic  # type: ignore[attr-defined]
            yield f


def test_set_sasl_credentials_serves_the_next_authentication(
    client: ModuleType, sasl_front: SaslFront
) -> None:
    topic = f"dropin-sasl-{uuid.uuid4().hex[:8]}"
    sasl_front.create_topic(topic, 1)  # type: ignore[attr-defined]
    p = _producer(
        client,
        sasl_front.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanisms="SCRAM-SHA-256",
        sasl_username="alice",
        sasl_password="wrong-pw",
    )
    reports = Reports()
    p.produce(topic, b"authenticated", on_delivery=reports)
    assert p.flush(1) == 1  # refused: the message waits
    p.set_sasl_credentials("alice", "right-pw")
    assert p.flush(30) == 0
    assert reports.items == [(None, b"authenticated")]
    assert [
        r.value
        for r in read_back(
            sasl_front.bootstrap_servers,
            topic,
            1,
            1,
            config={
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "SCRAM-SHA-256",
                "sasl.username": "alice",
                "sasl.password": "right-pw",
            },
        )
    ] == [b"authenticated"]
