"""confluent-kafka's documented producer usage, run with the import switched to
``cproducer.compat.confluent``, against the real broker (Tansu), read back by librdkafka
(``confluent_kafka.Consumer`` with ``assign()``).

Every test that describes confluent-kafka's behaviour runs against both modules (``client``):
passing with ``confluent_kafka`` itself shows the test states the peer's behaviour. The usage is
the one confluent-kafka's README and examples teach: ``produce(..., callback=...)`` with
``poll(0)`` in the loop and ``flush()`` at the end, ``BufferError`` → ``poll()`` → retry,
transactions with a consumer's ``position()`` and ``consumer_group_metadata()``."""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
import uuid
from types import ModuleType
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import confluent_kafka
import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CKTopicPartition

import cproducer.compat.confluent as facade
from cproducer.compat.confluent.partitioners import NAMES, hash_partition, is_sticky
from cproducer.localbroker import LocalBroker, free_port
from tests.integration.conftest import is_tansu
from tests.integration.readback import ConsumedRecord, assert_delivered, read_back
from tests.tools.sasl_front import SaslFront

CLIENTS = [pytest.param(confluent_kafka, id="confluent_kafka"), pytest.param(facade, id="facade")]

#: the facade's producers a test leaves open are closed after it, as librdkafka's end with
#: their last reference
pytestmark = pytest.mark.usefixtures("close_facade_producers")


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest) -> ModuleType:
    return request.param  # type: ignore[no-any-return]


class Reports:
    """A delivery callback recording (err, topic, partition, offset, key, value) per message,
    and the thread it ran on."""

    def __init__(self) -> None:
        self.items: List[Tuple[Any, ...]] = []
        self.threads: set = set()

    def __call__(self, err: Any, msg: Any) -> None:
        self.threads.add(threading.get_ident())
        self.items.append((err, msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value()))

    @property
    def errors(self) -> List[Any]:
        return [i[0] for i in self.items if i[0] is not None]


def _producer(client: ModuleType, broker: LocalBroker, **conf: Any) -> Any:
    config: Dict[str, Any] = {"bootstrap.servers": broker.bootstrap_servers}
    callbacks = ("on_delivery", "stats_cb", "error_cb", "logger")
    config.update({k if k in callbacks else k.replace("_", "."): v for k, v in conf.items()})
    return client.Producer(config)


def _landed(records: List[ConsumedRecord]) -> Dict[Tuple[int, int], Optional[bytes]]:
    return {(r.partition, r.offset): r.value for r in records}


# ------------------------------------------------------------------ the README loop


def test_readme_produce_poll_flush_delivers_every_message(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(3)
    p = _producer(client, broker)
    reports = Reports()
    data = [f"message {i}" for i in range(2000)]
    for line in data:
        p.poll(0)  # serve the delivery reports of earlier produce() calls
        p.produce(topic, line.encode("utf-8"), callback=reports)
    assert p.flush() == 0
    assert len(p) == 0
    assert len(reports.items) == len(data) and not reports.errors
    assert reports.threads == {threading.get_ident()}  # callbacks ran in this thread
    records = read_back(broker.bootstrap_servers, topic, 3, len(data))
    assert_delivered(records, [d.encode() for d in data])
    landed = _landed(records)
    assert len(landed) == len(data)
    # each report names the partition and offset its message landed at
    for _err, t, partition, offset, _key, value in reports.items:
        assert t == topic and landed[(partition, offset)] == value
    assert sorted(landed.values()) == sorted(d.encode() for d in data)  # type: ignore[type-var]


def test_buffer_error_then_poll_and_retry(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    p = _producer(client, broker, queue_buffering_max_messages=50)
    reports = Reports()
    full_at: List[int] = []
    for i in range(600):
        value = b"%d" % i
        while True:
            try:
                p.produce(topic, value, key=b"k%d" % (i % 7), on_delivery=reports)
                break
            except BufferError as exc:
                assert str(exc) == "Local: Queue full"
                # 50 produced messages whose reports were not served yet fill the queue
                full_at.append(i - len(reports.items))
                p.poll(1)
    assert p.flush(30) == 0
    assert full_at and set(full_at) == {50}
    assert len(reports.items) == 600 and not reports.errors
    records = read_back(broker.bootstrap_servers, topic, 2, 600)
    # the retried produce kept the produce order
    assert_delivered(records, [b"%d" % i for i in range(600)])


def test_queue_buffering_max_kbytes_bounds_the_queued_value_bytes(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    p = _producer(client, broker, queue_buffering_max_kbytes=1, linger_ms=1000)
    accepted = 0
    with pytest.raises(BufferError):
        for _ in range(10):
            p.produce(topic, b"x" * 300)
            accepted += 1
    assert accepted == 3  # 900 bytes queued; a fourth 300 would pass 1024
    assert p.flush(30) == 0
    p.produce(topic, b"x" * 300)  # room again once the reports were served
    assert p.flush(30) == 0


def test_len_poll_and_flush_report_what_is_left(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    p = _producer(client, broker, linger_ms=200)
    p.produce(topic, b"warm-up")
    assert p.flush(30) == 0
    assert p.poll(0) == 0  # nothing to serve
    reports = Reports()
    for i in range(20):
        p.produce(topic, b"%d" % i, on_delivery=reports)
    assert len(p) >= 20  # librdkafka also counts queued protocol requests
    assert bool(p) is True
    served = 0
    deadline = time.monotonic() + 30
    while len(reports.items) < 20 and time.monotonic() < deadline:
        served += p.poll(1)
    assert len(reports.items) == 20 and served >= 1
    assert len(p) == 0 and p.flush(0) == 0


def test_flush_timeout_returns_the_messages_left(client: ModuleType) -> None:
    # nobody listens here: nothing can be delivered
    p = client.Producer(
        {"bootstrap.servers": f"127.0.0.1:{free_port()}", "message.timeout.ms": 1500}
    )
    reports = Reports()
    for i in range(5):
        p.produce("nowhere", b"%d" % i, on_delivery=reports)
    assert p.flush(0.3) == 5
    assert p.flush(30) == 0  # they time out in the queue
    assert [e.code() for e in reports.errors] == [client.KafkaError._MSG_TIMED_OUT] * 5
    p.close()


# ------------------------------------------------------------------ messages and errors


def test_delivery_report_describes_the_message(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(4)
    p = _producer(client, broker)
    msgs: List[Any] = []
    ts = 1_700_000_000_123
    p.produce(
        topic,
        "välue",
        key="kéy",
        timestamp=ts,
        headers=[("a", b"1"), ("b", "zwei")],
        on_delivery=lambda err, msg: msgs.append((err, msg)),
    )
    p.produce(
        topic,
        b"raw",
        key=b"",
        partition=3,
        headers={"h": None},
        callback=lambda err, msg: msgs.append((err, msg)),
    )
    p.produce(topic, None, on_delivery=lambda err, msg: msgs.append((err, msg)))
    assert p.flush(30) == 0
    assert [err for err, _ in msgs] == [None, None, None]
    # reports of different partitions come in any order: find each message by its value
    by_value = {m.value(): m for _, m in msgs}
    first, second, third = by_value["välue".encode()], by_value[b"raw"], by_value[None]
    assert (first.topic(), first.key(), first.value()) == (topic, "kéy".encode(), "välue".encode())
    assert first.timestamp() == (client.TIMESTAMP_CREATE_TIME, ts)
    assert first.headers() is None  # confluent-kafka documents that reports carry no headers
    assert isinstance(first.latency(), float) and first.latency() > 0
    assert first.error() is None and len(first) == len("välue".encode())
    assert (second.partition(), second.key(), second.value()) == (3, b"", b"raw")
    assert second.timestamp()[0] == client.TIMESTAMP_CREATE_TIME
    assert abs(second.timestamp()[1] - time.time() * 1000) < 60_000
    assert third.value() is None and len(third) == 0
    read = read_back(broker.bootstrap_servers, topic, 4, 3)
    sent = ["välue".encode(), b"raw", None]
    assert_delivered(read, sent, partitions=[first.partition(), 3, third.partition()])
    records = {r.value: r for r in read}
    r1 = records["välue".encode()]
    assert (r1.partition, r1.offset) == (first.partition(), first.offset())
    assert r1.headers == [("a", b"1"), ("b", b"zwei")] and r1.timestamp == ts
    assert records[b"raw"].headers == [("h", None)] and records[b"raw"].partition == 3
    assert (records[None].partition, records[None].offset) == (third.partition(), third.offset())


def test_produce_refuses_what_cannot_be_produced(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    p = _producer(client, broker, message_max_bytes=10000)
    p.produce(topic, b"warm-up")
    assert p.flush(30) == 0
    with pytest.raises(client.KafkaException) as info:
        p.produce(topic, b"x", partition=2)
    assert info.value.args[0].code() == client.KafkaError._UNKNOWN_PARTITION
    with pytest.raises(client.KafkaException) as info:
        p.produce(topic, b"x" * 20000)
    assert info.value.args[0].code() == client.KafkaError.MSG_SIZE_TOO_LARGE
    with pytest.raises(TypeError):
        p.produce(topic, 42)
    with pytest.raises(TypeError):
        p.produce(topic, b"x", headers=[("h", 5)])
    with pytest.raises(TypeError):
        p.produce(topic, b"x", headers="h=1")
    assert len(p) == 0  # nothing of the refused calls stays queued


def test_config_on_delivery_and_delivery_report_only_error(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    reports = Reports()
    p = _producer(
        client,
        broker,
        on_delivery=reports,
        linger_ms=60000,  # the messages stay queued until purged or flushed
        **{"delivery.report.only.error": True},
    )
    p.produce(topic, b"warm-up")
    assert p.flush(30) == 0
    for i in range(5):
        p.produce(topic, b"purged-%d" % i)
    # blocking=False: confluent-kafka 2.16 inverts this flag (its default blocking=True purge
    # runs in the background and catches messages produced after it); the facade's purge is
    # done when it returns either way
    p.purge(in_flight=False, blocking=False)
    deadline = time.monotonic() + 10
    while len(reports.items) < 5 and time.monotonic() < deadline:
        p.poll(0.1)
    assert [e.code() for e in reports.errors] == [client.KafkaError._PURGE_QUEUE] * 5
    assert [e.name() for e in reports.errors] == ["_PURGE_QUEUE"] * 5
    for i in range(5):
        p.produce(topic, b"kept-%d" % i)
    assert p.flush(30) == 0
    assert len(reports.items) == 5  # successful deliveries are not reported
    records = read_back(broker.bootstrap_servers, topic, 1, 6)
    # a purged message is never written: it would be one not sent
    assert_delivered(records, [b"warm-up"] + [b"kept-%d" % i for i in range(5)])


def test_purge_is_done_when_it_returns(broker: LocalBroker, new_topic: Callable[..., str]) -> None:
    # as documented (purge(blocking=True) waits); confluent-kafka 2.16 does not: facade only
    topic = new_topic(1)
    p = _producer(facade, broker, linger_ms=60000)
    p.produce(topic, b"warm-up")
    assert p.flush(30) == 0
    reports = Reports()
    for i in range(5):
        p.produce(topic, b"purged-%d" % i, on_delivery=reports)
    p.purge()
    assert p.poll(0) == 5 and len(p) == 0
    assert [e.code() for e in reports.errors] == [facade.KafkaError._PURGE_QUEUE] * 5
    p.produce(topic, b"kept", on_delivery=reports)
    assert p.flush(30) == 0 and reports.items[-1][0] is None


def test_produce_batch_queues_each_message(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    p = _producer(client, broker)
    batch_reports, own_reports = Reports(), Reports()
    messages: List[Dict[str, Any]] = [
        {"value": f"message {i}", "key": f"key-{i % 3}"} for i in range(9)
    ]
    messages.append({"value": b"own-callback", "callback": own_reports})
    for bad in ([b"not a dict"], [{"value": 5}], [{"value": b"x"}, {"partition": "0"}]):
        with pytest.raises(TypeError, match="at index"):
            p.produce_batch(topic, bad)
    assert len(p) == 0  # a refused list queues nothing
    assert p.produce_batch(topic, messages, on_delivery=batch_reports) == 10
    assert p.flush(30) == 0
    assert len(batch_reports.items) == 9 and len(own_reports.items) == 1
    assert not any("_error" in m for m in messages)
    records = read_back(broker.bootstrap_servers, topic, 2, 10)
    assert_delivered(records, [b"message %d" % i for i in range(9)] + [b"own-callback"])


def test_produce_batch_follows_its_documentation(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    # confluent-kafka documents a per-message 'partition', 'timestamp' and the '_error' of a
    # message that was not queued; confluent-kafka 2.16 ignores the partition and refuses
    # timestamps, so this runs against the facade only
    topic = new_topic(3)
    p = _producer(facade, broker)
    p.produce(topic, b"warm-up", partition=0)
    assert p.flush(30) == 0
    messages: List[Dict[str, Any]] = [
        {"value": b"to-2", "partition": 2},
        {"value": b"to-1", "partition": 1, "timestamp": 1_700_000_000_000},
        {"value": b"nowhere", "partition": 7},
        {"value": b"default", "headers": [("h", b"v")]},
    ]
    assert p.produce_batch(topic, messages, partition=0) == 3
    assert messages[2]["_error"].code() == facade.KafkaError._UNKNOWN_PARTITION
    assert p.flush(30) == 0
    records = read_back(broker.bootstrap_servers, topic, 3, 4)
    sent = [b"warm-up", b"to-2", b"to-1", b"default"]
    assert_delivered(records, sent, partitions=[0, 2, 1, 0])
    got = {r.value: r for r in records}
    assert got[b"to-2"].partition == 2 and got[b"to-1"].partition == 1
    assert got[b"to-1"].timestamp == 1_700_000_000_000
    assert got[b"default"].partition == 0 and got[b"default"].headers == [("h", b"v")]


def test_list_topics(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic, other = new_topic(3), new_topic(1)
    p = _producer(client, broker)
    md = p.list_topics(topic, timeout=10)
    assert sorted(md.topics[topic].partitions) == [0, 1, 2]
    assert all(pm.leader in md.brokers for pm in md.topics[topic].partitions.values())
    assert md.topics[topic].error is None
    everything = p.list_topics(timeout=10)
    assert {topic, other} <= set(everything.topics)
    assert len(everything.topics[other].partitions) == 1
    broker_md = next(iter(everything.brokers.values()))
    assert str(broker_md) == f"{broker_md.host}:{broker_md.port}/{broker_md.id}"


def test_producers_shared_by_threads_deliver_everything(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(3)
    p = _producer(client, broker)
    reports = Reports()
    stop = threading.Event()

    def produce(n: int) -> None:
        for i in range(2000):
            while True:
                try:
                    p.produce(topic, b"%d-%d" % (n, i), key=b"%d" % n, on_delivery=reports)
                    break
                except BufferError:
                    time.sleep(0.001)

    def poller() -> None:
        while not stop.is_set():
            p.poll(0.05)

    threads = [threading.Thread(target=produce, args=(n,)) for n in range(4)]
    polling = threading.Thread(target=poller)
    polling.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    polling.join()
    assert p.flush(30) == 0
    assert len(reports.items) == 8000 and not reports.errors
    records = read_back(broker.bootstrap_servers, topic, 3, 8000)
    # one key per thread: each thread's messages in one partition, in its order
    sent = [b"%d-%d" % (n, i) for n in range(4) for i in range(2000)]
    assert_delivered(records, sent, thread_of=lambda v: v.split(b"-")[0])


# ------------------------------------------------------------------ callbacks from poll()


def test_stats_cb_gets_librdkafka_statistics(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    stats: List[str] = []
    p = _producer(
        client,
        broker,
        statistics_interval_ms=100,
        stats_cb=stats.append,
        client_id="stats-app",
        queue_buffering_max_messages=12345,
    )
    for i in range(100):
        p.produce(topic, b"x" * 10, key=b"%d" % i)
    assert p.flush(30) == 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        p.poll(0.1)
        if stats and topic in json.loads(stats[-1])["topics"]:
            break
    doc = json.loads(stats[-1])
    assert doc["type"] == "producer" and doc["client_id"] == "stats-app"
    assert doc["name"].startswith("stats-app#producer-")
    assert doc["msg_max"] == 12345 and doc["msg_cnt"] == 0 and doc["msg_size"] == 0
    assert doc["txmsgs"] >= 100 and doc["tx"] >= 1 and doc["tx_bytes"] > 1000
    assert doc["age"] > 0 and abs(doc["time"] - time.time()) < 60
    assert {"0", "1"} <= set(doc["topics"][topic]["partitions"])
    brokers = list(doc["brokers"].values())
    assert any(b["state"] == "UP" and b["nodeid"] >= 0 and b["tx"] >= 1 for b in brokers)
    assert any(f"{topic}-0" in b["toppars"] for b in brokers)


def test_error_cb_and_logger_hear_about_an_unreachable_broker(client: ModuleType) -> None:
    errors: List[Any] = []
    lines: List[Tuple[int, str]] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append((record.levelno, record.getMessage()))

    logger = logging.getLogger(f"facade-test-{uuid.uuid4().hex[:6]}")
    logger.addHandler(Collect())
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    port = free_port()
    p = client.Producer(
        {"bootstrap.servers": f"127.0.0.1:{port}", "error_cb": errors.append, "logger": logger}
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not (errors and lines):
        p.poll(0.2)
    codes = {e.code() for e in errors}
    assert codes & {client.KafkaError._TRANSPORT, client.KafkaError._ALL_BROKERS_DOWN}
    assert any(str(port) in e.str() for e in errors)
    assert any(level == logging.ERROR and str(port) in text for level, text in lines)
    p.close()


# ------------------------------------------------------------------ transactions


def _consumer(broker: LocalBroker, group: str) -> Any:
    return Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 50,
        }
    )


def _committed(broker: LocalBroker, group: str, topic: str) -> Optional[int]:
    c = _consumer(broker, group)
    try:
        [tp] = c.committed([CKTopicPartition(topic, 0)], timeout=10)
        return tp.offset if tp.offset >= 0 else None
    finally:
        c.close()


def test_consume_transform_produce_commits_output_and_offsets_together(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    source, sink = new_topic(1), new_topic(2)
    feeder = _producer(client, broker)
    for i in range(30):
        feeder.produce(source, b"in-%d" % i)
    assert feeder.flush(30) == 0
    group = f"ctp-{uuid.uuid4().hex[:8]}"
    consumer = _consumer(broker, group)
    p = _producer(client, broker, transactional_id=f"ctp-{uuid.uuid4().hex[:8]}")
    reports = Reports()
    try:
        consumer.assign([CKTopicPartition(source, 0, confluent_kafka.OFFSET_BEGINNING)])
        p.init_transactions(10)
        p.begin_transaction()
        consumed = 0
        deadline = time.monotonic() + 30
        while consumed < 20 and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=20 - consumed, timeout=0.2):
                if msg.error():
                    continue
                p.produce(sink, (msg.value() or b"").upper(), key=msg.key(), callback=reports)
                consumed += 1
        positions = consumer.position(consumer.assignment())
        p.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 10)
        p.commit_transaction(10)
        # commit_transaction flushed: every report was served before it returned
        assert len(reports.items) == 20 and not reports.errors
    finally:
        consumer.close()
    assert _committed(broker, group, source) == 20
    out = read_back(broker.bootstrap_servers, sink, 2, 20)
    assert_delivered(out, [b"IN-%d" % i for i in range(20)])  # produced in consumed order


def test_abort_reports_every_message_and_the_next_transaction_commits(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    p = _producer(client, broker, transactional_id=f"abort-{uuid.uuid4().hex[:8]}")
    p.init_transactions(10)
    for _known in (False, True):  # before and after the topic's metadata is known
        with pytest.raises(client.KafkaException) as info:
            p.produce(topic, b"outside")
        assert info.value.args[0].code() == client.KafkaError._STATE
        p.list_topics(topic, timeout=10)
    assert len(p) == 0
    with pytest.raises(client.KafkaException) as info:
        p.commit_transaction(5)
    assert info.value.args[0].code() == client.KafkaError._STATE
    aborted = Reports()
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, b"aborted-%d" % i, on_delivery=aborted)
    p.abort_transaction(10)
    assert len(aborted.items) == 10  # abort served every report
    allowed = {client.KafkaError._PURGE_QUEUE, client.KafkaError._PURGE_INFLIGHT}
    assert {e.code() for e in aborted.errors} <= allowed
    committed = Reports()
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, b"committed-%d" % i, on_delivery=committed)
    p.commit_transaction(10)
    assert len(committed.items) == 10 and not committed.errors
    records = read_back(broker.bootstrap_servers, topic, 1, 10)
    values = [r.value for r in records]
    assert [v for v in values if v and v.startswith(b"committed")] == [
        b"committed-%d" % i for i in range(10)
    ]
    aborted_values = [b"aborted-%d" % i for i in range(10)]
    sent = aborted_values + [b"committed-%d" % i for i in range(10)]
    assert_delivered(records, sent, may_be_missing=aborted_values)


def test_messages_waiting_for_their_topic_belong_to_the_transaction(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """Messages produced before their topic's metadata is known (librdkafka's UA partition) are
    in the transaction: commit_transaction delivers them before it commits, abort_transaction
    purges them; none is sent after its transaction ended. (On Tansu the topics are known at
    once: it answers a Metadata request for no topic with every topic.)"""
    committed_topic, aborted_topic = new_topic(1), new_topic(1)
    p = _producer(client, broker, transactional_id=f"waiting-{uuid.uuid4().hex[:8]}")
    p.init_transactions(10)
    committed = Reports()
    p.begin_transaction()
    for i in range(5):
        p.produce(committed_topic, b"committed-%d" % i, callback=committed)  # a new topic
    p.commit_transaction(10)
    assert len(committed.items) == 5 and not committed.errors
    aborted = Reports()
    p.begin_transaction()
    for i in range(5):
        p.produce(aborted_topic, b"aborted-%d" % i, callback=aborted)  # a new topic
    p.abort_transaction(10)
    assert len(aborted.items) == 5
    allowed = {client.KafkaError._PURGE_QUEUE, client.KafkaError._PURGE_INFLIGHT}
    assert len(aborted.errors) == 5 and {e.code() for e in aborted.errors} <= allowed
    last = Reports()
    p.begin_transaction()
    p.produce(aborted_topic, b"next", callback=last)
    p.commit_transaction(10)
    assert len(last.items) == 1 and not last.errors
    assert p.flush(10) == 0
    values = [r.value for r in read_back(broker.bootstrap_servers, committed_topic, 1, 5)]
    assert values == [b"committed-%d" % i for i in range(5)]
    # read_committed: only the next transaction's record (Tansu-only: an aborted record that
    # reached it before the abort would be shown)
    records = read_back(broker.bootstrap_servers, aborted_topic, 1, 1)
    aborted_values = [b"aborted-%d" % i for i in range(5)]
    assert_delivered(records, [*aborted_values, b"next"], may_be_missing=aborted_values)
    values = [r.value for r in records]
    if is_tansu(broker):
        assert values[-1] == b"next" and set(values[:-1]) <= {b"aborted-%d" % i for i in range(5)}
    else:
        assert values == [b"next"]


def test_a_fenced_producer_gets_a_fatal_error(
    client: ModuleType, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    txn_id = f"fence-{uuid.uuid4().hex[:8]}"
    first = _producer(client, broker, transactional_id=txn_id)
    first.init_transactions(10)
    second = _producer(client, broker, transactional_id=txn_id)
    second.init_transactions(10)
    with pytest.raises(client.KafkaException) as info:
        first.begin_transaction()
        first.produce(topic, b"zombie")
        first.commit_transaction(10)
    err = info.value.args[0]
    assert err.code() == client.KafkaError._FENCED and err.fatal()
    second.begin_transaction()
    second.produce(topic, b"alive")
    second.commit_transaction(10)


def test_transactional_calls_need_a_transactional_id(
    client: ModuleType, broker: LocalBroker
) -> None:
    p = _producer(client, broker)
    for call in (p.begin_transaction, lambda: p.init_transactions(1)):
        with pytest.raises(client.KafkaException) as info:
            call()
        assert info.value.args[0].code() == client.KafkaError._NOT_CONFIGURED


# ------------------------------------------------------------------ partition placement

KEYS = [b"key-%d" % i for i in range(150)] + [b"x", b"\x00\xff", "ünï".encode()]


def _place(
    client: ModuleType, broker: LocalBroker, topic: str, partitioner: str, sticky_ms: int
) -> Dict[str, List[ConsumedRecord]]:
    """Produce KEYS (twice), 30 empty keys and 30 null keys; read back, grouped by key kind."""
    p = _producer(client, broker, partitioner=partitioner, sticky_partitioning_linger_ms=sticky_ms)
    # every partition known and its leader connected before the first message: librdkafka
    # re-picks a sticky partition that has no leader broker yet
    p.list_topics(topic, timeout=10)
    for partition in range(6):
        p.produce(topic, b"warm-up", partition=partition)
    assert p.flush(30) == 0
    for rnd in range(2):
        for key in KEYS:
            p.produce(topic, b"keyed-%d" % rnd, key=key)
    for i in range(30):
        p.produce(topic, b"empty-%d" % i, key=b"")
    for i in range(30):
        p.produce(topic, b"null-%d" % i)
    assert p.flush(30) == 0
    records = read_back(broker.bootstrap_servers, topic, 6, 2 * len(KEYS) + 66)
    out: Dict[str, List[ConsumedRecord]] = {"keyed": [], "empty": [], "null": [], "warm": []}
    for r in records:
        out[(r.value or b"").split(b"-")[0].decode()].append(r)
    return out


@pytest.mark.parametrize("sticky_ms", [60000, 0], ids=["sticky", "no-sticky"])
@pytest.mark.parametrize("partitioner", NAMES)
def test_each_librdkafka_partitioner_places_keys_as_librdkafka_does(
    partitioner: str, sticky_ms: int, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    theirs = _place(confluent_kafka, broker, new_topic(6), partitioner, sticky_ms)
    ours = _place(facade, broker, new_topic(6), partitioner, sticky_ms)
    for placed in (theirs, ours):
        assert len(placed["keyed"]) == 2 * len(KEYS)
        assert len(placed["empty"]) == len(placed["null"]) == 30

    def by_key(records: List[ConsumedRecord]) -> Dict[Optional[bytes], set]:
        out: Dict[Optional[bytes], set] = {}
        for r in records:
            out.setdefault(r.key, set()).add(r.partition)
        return out

    if partitioner == "random":
        for placed in (theirs, ours):  # a random partition per keyed message
            assert len({r.partition for r in placed["keyed"]}) >= 3
    else:
        assert by_key(ours["keyed"]) == by_key(theirs["keyed"])
        assert all(len(parts) == 1 for parts in by_key(ours["keyed"]).values())
    for kind, key in (("empty", b""), ("null", None)):
        hashed = hash_partition(partitioner, key, 6)
        for who, placed in (("librdkafka", theirs), ("facade", ours)):
            parts = {r.partition for r in placed[kind]}
            if hashed >= 0:
                assert parts == {hashed}, (who, kind, parts)
            elif is_sticky(partitioner, key, sticky_ms):
                assert len(parts) == 1, (who, kind, parts)  # one sticky partition for the burst
            else:
                assert len(parts) >= 2, (who, kind, parts)  # random per message


def test_switching_the_import_keeps_every_key_on_its_partition(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    # no partitioner configured: librdkafka's default consistent_random (CRC-32 of the key)
    topic = new_topic(5)
    for module in (confluent_kafka, facade):
        p = _producer(module, broker)
        for key in KEYS:
            p.produce(topic, module.__name__.encode(), key=key)
        assert p.flush(30) == 0
    records = read_back(broker.bootstrap_servers, topic, 5, 2 * len(KEYS))
    partitions: Dict[Optional[bytes], set] = {}
    for r in records:
        partitions.setdefault(r.key, set()).add(r.partition)
    assert len(partitions) == len(KEYS)
    assert all(len(parts) == 1 for parts in partitions.values())


# ------------------------------------------------------------------ SASL

SASL_PASSWORD = "facade-s3cret-pw"


@pytest.fixture(scope="module")
def sasl_front() -> Iterator[SaslFront]:
    """A Tansu broker behind a SASL front that advertises the front's port."""
    port = free_port()
    with LocalBroker(advertised_port=port) as upstream:
        with SaslFront(upstream.bootstrap_servers, users={"alice": SASL_PASSWORD}, port=port) as f:
            f.create_topic = upstream.create_topic  # type: ignore[attr-defined]
            yield f


def _oauth_cb(config: Any) -> Tuple[str, float]:
    claims = {"sub": "alice", "iat": time.time(), "exp": time.time() + 300}
    part = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    header = base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=").decode()
    return f"{header}.{part}.", claims["exp"]


@pytest.mark.parametrize(
    "mechanism, settings",
    [
        ("PLAIN", {"sasl.username": "alice", "sasl.password": SASL_PASSWORD}),
        ("SCRAM-SHA-256", {"sasl.username": "alice", "sasl.password": SASL_PASSWORD}),
        ("SCRAM-SHA-512", {"sasl.username": "alice", "sasl.password": SASL_PASSWORD}),
        (
            "OAUTHBEARER",
            {
                "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": "principal=alice lifeSeconds=300",
            },
        ),
        ("OAUTHBEARER", {"oauth_cb": _oauth_cb}),
    ],
    ids=["plain", "scram-256", "scram-512", "oauth-unsecured-jwt", "oauth_cb"],
)
def test_sasl_settings_authenticate(
    client: ModuleType, sasl_front: SaslFront, mechanism: str, settings: Dict[str, Any]
) -> None:
    topic = f"facade-sasl-{uuid.uuid4().hex[:8]}"
    sasl_front.create_topic(topic, 1)  # type: ignore[attr-defined]
    conf = {
        "bootstrap.servers": sasl_front.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": mechanism,
        **settings,
    }
    before = len(sasl_front.authentications)
    p = client.Producer(conf)
    reports = Reports()
    for i in range(20):
        p.produce(topic, b"s%d" % i, on_delivery=reports)
    assert p.flush(30) == 0
    assert len(reports.items) == 20 and not reports.errors
    done = sasl_front.authentications[before:]
    assert done and {(a.mechanism, a.principal) for a in done} == {(mechanism, "alice")}


def test_a_wrong_sasl_password_fails_the_messages(
    client: ModuleType, sasl_front: SaslFront
) -> None:
    reports = Reports()
    p = client.Producer(
        {
            "bootstrap.servers": sasl_front.bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": "wrong",
            "message.timeout.ms": 3000,
        }
    )
    p.produce("anything", b"x", on_delivery=reports)
    assert p.flush(30) == 0
    assert len(reports.errors) == 1  # never delivered


def test_sasl_refusals_name_what_to_set(broker: LocalBroker) -> None:
    base = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT"}
    with pytest.raises(facade.KafkaException, match="GSSAPI"):
        facade.Producer(base)  # librdkafka's default mechanism
    with pytest.raises(facade.KafkaException, match="oauth_cb"):
        facade.Producer({**base, "sasl.mechanism": "OAUTHBEARER"})
    with pytest.raises(facade.KafkaException, match="principal"):
        facade.Producer(
            {
                **base,
                "sasl.mechanism": "OAUTHBEARER",
                "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": "lifeSeconds=60",
            }
        )
