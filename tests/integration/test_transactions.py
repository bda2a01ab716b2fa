"""Transactions against the real brokers (Tansu and Apache Kafka), read back with librdkafka
(read_committed, its default): init/begin/commit/abort, the commit and abort markers, fencing,
close with an open transaction, consumer offsets committed with a transaction (read back with
librdkafka's ``committed``), and the errors a user meets when calling things out of order.

Both write the markers (each takes an offset, which librdkafka skips). Apache Kafka hides aborted
records from read_committed consumers; Tansu does not (../shared/notes/broker.md), so there an
abort is checked by its marker and by the fate of the records, not by their invisibility."""

from __future__ import annotations

import threading
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as CKTopicPartition

from cproducer import ConsumerGroupMetadata, KafkaProducer, TopicPartition, errors
from cproducer.localbroker import LocalBroker
from tests.integration.conftest import is_tansu
from tests.integration.readback import assert_delivered, by_partition, committed, read_back

READ_UNCOMMITTED = {"isolation.level": "read_uncommitted"}


def _producer(broker: LocalBroker, txn_id: str, **kw: Any) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=txn_id, **kw)


def test_commit_delivers_every_record_once_followed_by_a_marker(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    p = _producer(broker, "tx-commit")
    try:
        p.init_transactions(10)
        p.begin_transaction()
        futures = [p.send(topic, b"v%d" % i, key=b"k%d" % (i % 50)) for i in range(1000)]
        p.commit_transaction(10)
        assert all(f.is_done for f in futures)  # commit returns after every record completed
        metas = [f.get(0) for f in futures]
        # a second transaction: its first record sits one offset after the first's last, the
        # offset between is the commit marker
        p.begin_transaction()
        after = {part: p.send(topic, b"after", partition=part) for part in (0, 1)}
        p.commit_transaction(10)
    finally:
        p.close(10)
    last_offset: Dict[int, int] = {}
    for m in metas:
        last_offset[m.partition] = max(last_offset.get(m.partition, -1), m.offset)
    assert set(last_offset) == {0, 1}
    for part, f in after.items():
        assert f.get(0).offset == last_offset[part] + 2
    records = read_back(broker.bootstrap_servers, topic, 2, 1002)
    # "after" is in both partitions: a record is named by its partition and value
    sent = [(m.partition, b"v%d" % i) for i, m in enumerate(metas)] + [(0, b"after"), (1, b"after")]
    assert_delivered(records, sent, identity=lambda r: (r.partition, r.value))
    for rs in by_partition(records).values():
        offsets = [r.offset for r in rs]
        # dense up to the marker, then the marker's offset skipped
        assert offsets[:-1] == list(range(len(offsets) - 1))
        assert offsets[-1] == len(offsets)
    # every record at the offset its future reported
    at = {(r.partition, r.offset): r.value for r in records}
    assert all(at[(m.partition, m.offset)] == b"v%d" % i for i, m in enumerate(metas))


def test_abort_fails_unsent_records_and_writes_a_marker_for_sent_ones(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    p = _producer(broker, "tx-abort", linger_ms=60000, batch_size=1 << 20)
    calls: Dict[int, List[Optional[BaseException]]] = {}
    lock = threading.Lock()

    def cb(i: int) -> Callable[[Any, Optional[BaseException]], None]:
        def done(_md: Any, exc: Optional[BaseException]) -> None:
            with lock:
                calls.setdefault(i, []).append(exc)

        return done

    try:
        p.init_transactions(10)
        p.begin_transaction()
        sent = [p.send(topic, b"s%d" % i, partition=0, callback=cb(i)) for i in range(10)]
        p.flush(10)  # these reach the broker
        # these linger (60 s): the abort fails them before they are sent
        unsent = [p.send(topic, b"u%d" % i, partition=0, callback=cb(100 + i)) for i in range(5)]
        p.abort_transaction(10)
        for f in unsent:
            assert isinstance(f.exception, errors.TransactionAbortedError)
        assert all(f.exception is None for f in sent)
        assert sorted(calls) == list(range(10)) + list(range(100, 105))
        assert all(len(c) == 1 for c in calls.values())
        assert all(calls[100 + i][0] is not None for i in range(5))
        # the producer goes on: a new transaction commits
        p.begin_transaction()
        last = p.send(topic, b"next", partition=0)
        p.commit_transaction(10)
    finally:
        p.close(10)
    # 10 records (0-9), the abort marker (10), then "next" (11)
    assert last.get(0).offset == 11
    uncommitted = read_back(broker.bootstrap_servers, topic, 1, 11, config=READ_UNCOMMITTED)
    assert [r.value for r in uncommitted] == [b"s%d" % i for i in range(10)] + [b"next"]
    # read_committed: the aborted records hidden (Tansu-only: shown)
    visible = [r.value for r in uncommitted] if is_tansu(broker) else [b"next"]
    values = [r.value for r in read_back(broker.bootstrap_servers, topic, 1, len(visible))]
    assert values == visible


def test_a_second_producer_with_the_same_id_fences_the_first(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """The second producer's init_transactions bumps the epoch (and the coordinator aborts the
    first producer's open transaction). The first producer's next record goes to a partition
    already in its transaction: Apache Kafka's leader answers INVALID_PRODUCER_EPOCH (KIP-588),
    abortable, and the abort's EndTxn is answered PRODUCER_FENCED, fatal (as Java's producer
    reports it). Tansu answers the Produce PRODUCER_FENCED, as brokers before Kafka 2.7 did:
    fatal at once (Tansu-only)."""
    topic = new_topic(1)
    first = _producer(broker, "tx-fence")
    second = _producer(broker, "tx-fence")
    try:
        first.init_transactions(10)
        first.begin_transaction()
        first.send(topic, b"one", partition=0).get(10)
        second.init_transactions(10)  # bumps the epoch: the first producer is a zombie now
        zombie = first.send(topic, b"zombie", partition=0)
        if is_tansu(broker):
            with pytest.raises(errors.ProducerFencedError):
                zombie.get(10)
            with pytest.raises(errors.ProducerFencedError):
                first.commit_transaction(5)
        else:
            with pytest.raises(errors.InvalidProducerEpochError):
                zombie.get(10)
            with pytest.raises(errors.TransactionAbortableError) as commit:
                first.commit_transaction(5)
            assert isinstance(commit.value.__cause__, errors.InvalidProducerEpochError)
            with pytest.raises(errors.ProducerFencedError):
                first.abort_transaction(5)
        with pytest.raises(errors.ProducerFencedError):
            first.send(topic, b"again", partition=0)
        second.begin_transaction()
        second.send(topic, b"two", partition=0)
        second.commit_transaction(10)
    finally:
        first.close(5)
        second.close(5)
    # the zombie's record never reached the log; the first producer's transaction was aborted
    uncommitted = read_back(broker.bootstrap_servers, topic, 1, 2, config=READ_UNCOMMITTED)
    assert sorted(r.value for r in uncommitted) == [b"one", b"two"]
    visible = [b"one", b"two"] if is_tansu(broker) else [b"two"]  # Tansu shows aborted records
    values = [r.value for r in read_back(broker.bootstrap_servers, topic, 1, len(visible))]
    assert sorted(values) == visible


def test_close_aborts_an_open_transaction(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    p = _producer(broker, "tx-close")
    p.init_transactions(10)
    p.begin_transaction()
    sent = p.send(topic, b"in-flight", partition=0)
    sent.get(10)
    pending = p.send(topic, b"pending", partition=0)
    p.close(10)
    assert pending.is_done  # completed one way or the other, never left hanging
    # a new producer with the same id finds no transaction left open: its commit lands right
    # after the abort marker
    q = _producer(broker, "tx-close")
    try:
        q.init_transactions(10)
        q.begin_transaction()
        f = q.send(topic, b"fresh", partition=0)
        q.commit_transaction(10)
    finally:
        q.close(10)
    first = sent.get(0).offset
    assert f.get(0).offset > first + 1  # at least the abort marker in between


def test_calls_out_of_order_raise_clear_errors(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    p = _producer(broker, "tx-order")
    try:
        with pytest.raises(errors.IllegalStateError, match="init_transactions"):
            p.send(topic, b"x")
        with pytest.raises(errors.IllegalStateError, match="init_transactions"):
            p.begin_transaction()
        p.init_transactions(10)
        with pytest.raises(errors.IllegalStateError, match="begin_transaction"):
            p.send(topic, b"x")
        with pytest.raises(errors.IllegalStateError, match="begin_transaction"):
            p.send_many(topic, [b"x"])
        with pytest.raises(errors.IllegalStateError, match="READY to COMMITTING"):
            p.commit_transaction(1)
        p.begin_transaction()
        with pytest.raises(errors.IllegalStateError, match="IN_TRANSACTION to IN_TRANSACTION"):
            p.begin_transaction()
        p.send_many(topic, [b"a", b"b"], partition=0)
        p.send(topic, b"c", partition=0)  # (the Cython fast path, open in a transaction)
        p.commit_transaction(10)
        with pytest.raises(errors.IllegalStateError, match="begin_transaction"):
            p.send(topic, b"late", partition=0)  # ... and shut again after it
    finally:
        p.close(10)
    plain = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    try:
        with pytest.raises(errors.IllegalStateError, match="transactional.id"):
            plain.begin_transaction()
    finally:
        plain.close(5)
    with pytest.raises(errors.ConfigError, match="enable.idempotence"):
        KafkaProducer(
            bootstrap_servers=broker.bootstrap_servers,
            transactional_id="tx-x",
            enable_idempotence=False,
        )
    assert_delivered(read_back(broker.bootstrap_servers, topic, 1, 3), [b"a", b"b", b"c"])


def test_offsets_sent_to_a_transaction_commit_with_it_and_only_with_it(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    # Tansu applies the offsets of a producer's first transaction only (those of its later
    # transactions are acknowledged and dropped; librdkafka's transactional producer sees the
    # same), so each case runs as the first transaction of its own producer and group.
    source, sink = new_topic(1), new_topic(1)
    bs = broker.bootstrap_servers

    def fresh() -> Tuple[KafkaProducer, str]:
        p = _producer(broker, f"tx-offsets-{uuid.uuid4().hex[:8]}")
        p.init_transactions(10)
        return p, f"group-{uuid.uuid4().hex[:8]}"

    p, group = fresh()
    try:
        p.begin_transaction()
        p.send(sink, b"out-1", partition=0)
        p.send_offsets_to_transaction({(source, 0): 10}, group, timeout=10)
        # not before the commit: a read_uncommitted consumer's committed() has no offset yet;
        # Apache Kafka holds a read_committed consumer's (require_stable, KIP-447) until the
        # transaction ends (Tansu-only: answered at once, without the pending offset)
        assert committed(bs, group, source, stable=False) is None
        if not is_tansu(broker):
            with pytest.raises(KafkaException, match="Timed out"):
                committed(bs, group, source, timeout_s=1)
        p.commit_transaction(10)
        assert committed(bs, group, source) == 10
    finally:
        p.close(10)

    # confluent-kafka's TopicPartition list and a ConsumerGroupMetadata; aborted
    p, group = fresh()
    try:
        p.begin_transaction()
        p.send(sink, b"out-2", partition=0)
        p.send_offsets_to_transaction(
            [CKTopicPartition(source, 0, 20)], ConsumerGroupMetadata(group), timeout=10
        )
        p.abort_transaction(10)
        assert committed(bs, group, source) is None  # aborted offsets never count
    finally:
        p.close(10)

    # bad arguments, then offsets alone (no record): the transaction still ends with EndTxn
    p, group = fresh()
    try:
        p.begin_transaction()
        with pytest.raises(TypeError, match="consumer_group_metadata"):
            p.send_offsets_to_transaction({(source, 0): 30}, b"opaque-bytes")
        with pytest.raises(ValueError, match=r"offset of .*\[0\] must be an int >= 0"):
            p.send_offsets_to_transaction({(source, 0): -1}, group)
        with pytest.raises(TypeError, match="offsets must be a mapping"):
            p.send_offsets_to_transaction(42, group)
        p.send_offsets_to_transaction({TopicPartition(source, 0): (30, "meta")}, group)
        p.commit_transaction(10)
        assert committed(bs, group, source) == 30
        with pytest.raises(errors.IllegalStateError, match="needs an open transaction"):
            p.send_offsets_to_transaction({(source, 0): 31}, group)
    finally:
        p.close(10)
