"""Transactions with Apache Kafka's transaction coordinator (Apache Kafka only), on a broker of its
own that aborts a timed-out transaction within half a second of its timeout
(``transaction.abort.timed.out.transaction.cleanup.interval.ms``; the default checks every ten
seconds).

What Tansu cannot show (test_transactions.py runs the basics on both brokers): read_committed
consumers, librdkafka's and Java's, skip aborted records; the coordinator aborts a zombie's and a
timed-out transaction and bumps its epoch; a consumer group's offsets sent to a transaction are
the group's only once it commits; a KIP-360 epoch bump (InitProducerId with the current producer
id and epoch, which Tansu answers UNKNOWN_SERVER_ERROR) after an abortable error; the broker's own
TRANSACTION_ABORTABLE (KIP-890).

The broker is formatted with ``transaction.version=1`` (Kafka 4.x's default is 2), so the
producer speaks transaction version 1 (AddPartitionsToTxn before a partition's first batch,
EndTxn up to v4, Produce up to v11); test_kafka_txn_v2.py runs transactions version 2 beside
it. What the producer reports is what Java's producer reports with transaction version 1 (Java
4.4 against a 4.4 broker at ``transaction.version=1``): a fenced or timed-out producer's records
fail with INVALID_PRODUCER_EPOCH, abortable (KIP-588), and the abort's EndTxn is answered
PRODUCER_FENCED, fatal; a new partition's AddPartitionsToTxn is answered PRODUCER_FENCED at
once. (Where Java's commitTransaction rethrows the InvalidProducerEpochException, this producer
raises its one exception for "abort now", TransactionAbortableError, caused by it.) librdkafka
makes the record's INVALID_PRODUCER_EPOCH fatal at once."""

from __future__ import annotations

import time
import uuid
from typing import Any, Callable, Iterator, List, Optional

import pytest
from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as CKTopicPartition

from cproducer import KafkaProducer, TopicPartition, errors
from tests.integration.readback import ConsumedRecord, assert_delivered, read_back, read_back_java
from tests.tools.apache_kafka import ApacheKafka

pytestmark = pytest.mark.kafka

READ_COMMITTED = {"isolation.level": "read_committed"}
READ_UNCOMMITTED = {"isolation.level": "read_uncommitted"}


@pytest.fixture(scope="module")
def broker() -> Iterator[ApacheKafka]:
    """(Named as the suite's fixture, so that a failure prints this broker's log.)"""
    with ApacheKafka(
        properties={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"},
        features={"transaction.version": 1},
    ) as kafka:
        yield kafka


def producer(broker: ApacheKafka, **kw: Any) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        transactional_id=f"kafka-txn-{uuid.uuid4().hex[:8]}",
        **kw,
    )


def read(
    broker: ApacheKafka, topic: str, partitions: int, expected: int, config: Any
) -> List[ConsumedRecord]:
    return read_back(broker.bootstrap_servers, topic, partitions, expected, config=config)


def values(
    broker: ApacheKafka, topic: str, partitions: int, expected: int, config: Any
) -> List[bytes]:
    return sorted(r.value or b"" for r in read(broker, topic, partitions, expected, config))


SEAL = b"seal"


def seal(broker: ApacheKafka, topic: str, partitions: int) -> None:
    """A committed record at the end of each partition: a reader that got it has passed every
    record before it (a partition is read in order), so a read that ends there missed nothing."""
    p = producer(broker)
    try:
        p.init_transactions(30)
        p.begin_transaction()
        for partition in range(partitions):
            p.send(topic, SEAL, partition=partition)
        p.commit_transaction(30)
    finally:
        p.close(30)


def test_read_committed_readers_see_committed_records_once_and_aborted_ones_never(
    broker: ApacheKafka, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    committed = [b"c1-%d" % i for i in range(100)] + [b"c2-%d" % i for i in range(100)]
    aborted = [b"a-%d" % i for i in range(100)]
    p = producer(broker)
    try:
        p.init_transactions(30)
        for batch, commit in ((committed[:100], True), (aborted, False), (committed[100:], True)):
            p.begin_transaction()
            futures = [p.send(topic, v, partition=i % 2) for i, v in enumerate(batch)]
            p.flush(30)  # the aborted records reach the log too: only the marker hides them
            assert all(f.exception is None for f in futures)
            if commit:
                p.commit_transaction(30)
            else:
                p.abort_transaction(30)
    finally:
        p.close(30)
    # an aborted record read would be one never sent
    to = [i % 2 for i in range(100)]
    records = read(broker, topic, 2, 200, READ_COMMITTED)
    assert_delivered(records, committed, partitions=to * 2, context="read_committed")
    java = read_back_java(broker.bootstrap_servers, topic, 2, 200, config=READ_COMMITTED)
    assert_delivered(java, committed, partitions=to * 2, context="Java, read_committed")
    # read_uncommitted sees every record written, the aborted ones at their offsets
    records = read(broker, topic, 2, 300, READ_UNCOMMITTED)
    written = committed[:100] + aborted + committed[100:]
    assert_delivered(records, written, partitions=to * 3, context="read_uncommitted")


@pytest.mark.parametrize("api_version", [None, (2, 5)], ids=["latest", "2.5"])
def test_a_zombie_fenced_by_a_producer_with_the_same_id_never_gets_its_records_read(
    broker: ApacheKafka, new_topic: Callable[..., str], api_version: Any
) -> None:
    """With Kafka 2.5's versions (EndTxn v1, before KIP-588's v2) the coordinator answers the
    zombie's abort INVALID_PRODUCER_EPOCH rather than PRODUCER_FENCED: the same fatal
    ProducerFencedError (Java's handlers make it ProducerFencedException)."""
    topic = new_topic(1)
    txn_id = f"kafka-zombie-{uuid.uuid4().hex[:8]}"
    first = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, transactional_id=txn_id, api_version=api_version
    )
    second = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=txn_id)
    try:
        first.init_transactions(30)
        first.begin_transaction()
        for i in range(10):
            first.send(topic, b"first-%d" % i, partition=0)
        first.flush(30)
        # the coordinator aborts the first producer's transaction (with a bumped epoch) and
        # gives the second producer the same producer id with a newer epoch
        second.init_transactions(30)
        pid, epoch = first._transaction_manager.producer_id_and_epoch
        assert second._transaction_manager.producer_id_and_epoch[0] == pid
        assert second._transaction_manager.producer_id_and_epoch[1] > epoch
        zombie = first.send(topic, b"zombie", partition=0)
        with pytest.raises(errors.InvalidProducerEpochError):
            zombie.get(30)
        with pytest.raises(errors.TransactionAbortableError) as commit:
            first.commit_transaction(30)
        assert isinstance(commit.value.__cause__, errors.InvalidProducerEpochError)
        with pytest.raises(errors.ProducerFencedError):
            first.abort_transaction(30)
        with pytest.raises(errors.ProducerFencedError):
            first.send(topic, b"again", partition=0)
        second.begin_transaction()
        for i in range(10):
            second.send(topic, b"second-%d" % i, partition=0)
        second.commit_transaction(30)
    finally:
        first.close(30)
        second.close(30)
    expected = [b"second-%d" % i for i in range(10)]
    assert_delivered(read(broker, topic, 1, 10, READ_COMMITTED), expected, context="read_committed")
    java = read_back_java(broker.bootstrap_servers, topic, 1, 10, config=READ_COMMITTED)
    assert_delivered(java, expected, context="Java, read_committed")
    # the first producer's records are in the log (the coordinator aborted them) before the
    # second's, the zombie's record never got there
    everything = read(broker, topic, 1, 20, READ_UNCOMMITTED)
    first_records = [b"first-%d" % i for i in range(10)]
    assert_delivered(everything, first_records + expected, context="read_uncommitted")


def _wait_for_no_open_transaction(broker: ApacheKafka, topic: str, partition: int) -> None:
    """Until the partition's last stable offset is its end: the coordinator aborted the
    transaction that held it back (the marker is the last offset)."""
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": "lso", **READ_COMMITTED}
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            tp = CKTopicPartition(topic, partition)
            _, stable = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
            if stable > 0:
                return
            time.sleep(0.1)
        raise AssertionError(f"{topic}[{partition}]: the transaction was not aborted")
    finally:
        consumer.close()


def test_a_transaction_past_its_timeout_is_aborted_and_the_producer_fenced(
    broker: ApacheKafka, new_topic: Callable[..., str]
) -> None:
    """The coordinator aborts a transaction open longer than transaction.timeout.ms and bumps the
    producer's epoch (transaction version 1). A later record to a partition already in the
    transaction is refused INVALID_PRODUCER_EPOCH: abortable, and the abort is answered
    PRODUCER_FENCED; a record to a new partition gets PRODUCER_FENCED from AddPartitionsToTxn at
    once. (Not TRANSACTION_ABORTABLE: the broker answers that only when the epoch is current.)"""
    topic = new_topic(2)
    same = producer(broker, transaction_timeout_ms=1000)
    new = producer(broker, transaction_timeout_ms=1000)
    try:
        for p, partition in ((same, 0), (new, 1)):
            p.init_transactions(30)
            p.begin_transaction()
            p.send(topic, b"early", partition=partition).get(30)
        _wait_for_no_open_transaction(broker, topic, 0)
        _wait_for_no_open_transaction(broker, topic, 1)
        with pytest.raises(errors.InvalidProducerEpochError):
            same.send(topic, b"late", partition=0).get(30)
        with pytest.raises(errors.TransactionAbortableError):
            same.commit_transaction(30)
        with pytest.raises(errors.ProducerFencedError):
            same.abort_transaction(30)

        with pytest.raises(errors.ProducerFencedError):
            new.send(topic, b"late", partition=0).get(30)  # (partition 0 joins the transaction)
        with pytest.raises(errors.ProducerFencedError):
            new.commit_transaction(30)
    finally:
        same.close(30)
        new.close(30)
    seal(broker, topic, 2)
    assert values(broker, topic, 2, 4, READ_UNCOMMITTED) == [b"early", b"early", SEAL, SEAL]
    assert values(broker, topic, 2, 2, READ_COMMITTED) == [SEAL, SEAL]


def test_transaction_abortable_from_the_broker_then_abort_and_the_next_transaction_commits(
    broker: ApacheKafka, new_topic: Callable[..., str]
) -> None:
    """KIP-890's verification: the partition leader asks the coordinator whether the partition
    is in the producer's transaction before it writes its first transactional batch, and answers
    TRANSACTION_ABORTABLE (Produce v11) when the epoch is current but the partition is not. The
    producer always adds a partition first, and a timed-out transaction gets a new epoch (see
    above), so this test puts partition 1 in the producer's view of the transaction without
    AddPartitionsToTxn. The record fails, the transaction is abortable, the abort bumps the epoch
    (KIP-360: a batch failed outside commit and abort, Java's maybeTransitionToErrorState) and
    the next transaction writes partition 1."""
    topic = new_topic(2)
    p = producer(broker)
    tm = p._transaction_manager
    try:
        p.init_transactions(30)
        pid, epoch = tm.producer_id_and_epoch
        p.begin_transaction()
        p.send(topic, b"kept", partition=0).get(30)  # the coordinator's transaction has p0
        with tm._lock:
            tm.partitions_in_transaction.add(TopicPartition(topic, 1))
        refused = p.send(topic, b"refused", partition=1)
        with pytest.raises(errors.TransactionAbortableError):
            refused.get(30)
        with pytest.raises(errors.TransactionAbortableError):
            p.commit_transaction(30)
        p.abort_transaction(30)
        assert tm.producer_id_and_epoch == (pid, epoch + 1)
        p.begin_transaction()
        after = p.send(topic, b"after", partition=1)
        p.commit_transaction(30)
        assert after.get(0).offset == 0  # the refused record took no offset
    finally:
        p.close(30)
    seal(broker, topic, 2)
    assert values(broker, topic, 2, 3, READ_COMMITTED) == [b"after", SEAL, SEAL]
    assert values(broker, topic, 2, 4, READ_UNCOMMITTED) == [b"after", b"kept", SEAL, SEAL]


def test_an_abortable_error_bumps_the_epoch_and_the_next_transaction_commits(
    broker: ApacheKafka,
) -> None:
    """KIP-360: a record the broker refuses in an open transaction (too large for its topic's
    max.message.bytes) makes the transaction abortable; the abort is followed by InitProducerId
    with the current producer id and epoch, which Apache Kafka answers with the next epoch (Tansu
    answers UNKNOWN_SERVER_ERROR). The next transaction's sequences start again at 0 under it.
    librdkafka 2.x aborts but its next transaction fails too (it keeps its sequence numbers;
    see test_transaction_abortable.py)."""
    topic = f"kafka-txn-small-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1, configs={"max.message.bytes": "2000"})
    p = producer(broker)
    tm = p._transaction_manager
    try:
        p.init_transactions(30)
        pid, epoch = tm.producer_id_and_epoch
        p.begin_transaction()
        before = [p.send(topic, b"before-%d" % i, partition=0) for i in range(5)]
        p.commit_transaction(30)
        p.begin_transaction()
        p.send(topic, b"ok", partition=0).get(30)
        with pytest.raises(errors.MessageSizeTooLargeError):
            p.send(topic, b"x" * 5000, partition=0).get(30)
        with pytest.raises(errors.TransactionAbortableError):
            p.commit_transaction(30)
        p.abort_transaction(30)
        assert tm.producer_id_and_epoch == (pid, epoch + 1)
        p.begin_transaction()
        after = [p.send(topic, b"after-%d" % i, partition=0) for i in range(5)]
        p.commit_transaction(30)
    finally:
        p.close(30)
    # offsets: before 0-4, commit marker 5, "ok" 6, abort marker 7, after 8-12
    assert [f.get(0).offset for f in before] == list(range(5))
    assert [f.get(0).offset for f in after] == list(range(8, 13))
    # the aborted "ok" read would be a record never sent
    expected = [b"before-%d" % i for i in range(5)] + [b"after-%d" % i for i in range(5)]
    assert_delivered(read(broker, topic, 1, 10, READ_COMMITTED), expected)


def _committed(
    broker: ApacheKafka, group: str, topic: str, consumer: Optional[Consumer] = None
) -> Optional[int]:
    """The group's committed offset of ``topic``[0]: asked through ``consumer`` (the group's
    member), or a consumer of its own with the group's id."""
    own = consumer is None
    c = consumer or Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        (tp,) = c.committed([CKTopicPartition(topic, 0)], timeout=10)
        return None if tp.offset < 0 else int(tp.offset)
    finally:
        if own:
            c.close()


def test_offsets_sent_to_a_transaction_are_the_groups_once_it_commits_and_never_if_aborted(
    broker: ApacheKafka, new_topic: Callable[..., str]
) -> None:
    """A consumer in a real group (subscribe, a member with a generation) reads; the producer
    sends what it made of the records and the consumer's position to the transaction. The group
    coordinator keeps the offsets pending until the commit marker: the member's committed()
    (librdkafka asks with require_stable, KIP-447) gets no answer while the transaction is open
    and a read_uncommitted consumer sees no offset; after the commit both see it. An aborted
    transaction's offsets are dropped; the same producer's later transaction commits its own
    (Tansu keeps a producer's first transaction's offsets only)."""
    source, sink = new_topic(1), new_topic(1)
    seed = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    try:
        for i in range(30):
            seed.send(source, b"in-%d" % i, partition=0)
        seed.flush(30)
    finally:
        seed.close(30)
    group = f"kafka-txn-group-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([source])
    p = producer(broker)

    def consume(n: int) -> List[Any]:
        got: List[Any] = []
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            got += [m for m in consumer.consume(n - len(got), timeout=1) if not m.error()]
        assert len(got) == n
        return got

    def transaction(commit: bool) -> None:
        p.begin_transaction()
        for m in consume(10):
            p.send(sink, b"out-" + m.value(), partition=0)
        position = consumer.position([CKTopicPartition(source, 0)])
        p.send_offsets_to_transaction(position, group, timeout=30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)

    try:
        p.init_transactions(30)
        p.begin_transaction()
        for m in consume(10):
            p.send(sink, b"out-" + m.value(), partition=0)
        p.send_offsets_to_transaction(
            consumer.position([CKTopicPartition(source, 0)]), group, timeout=30
        )
        with pytest.raises(KafkaException, match="Timed out"):
            consumer.committed([CKTopicPartition(source, 0)], timeout=1)
        uncommitted = Consumer(
            {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, **READ_UNCOMMITTED}
        )
        try:
            (tp,) = uncommitted.committed([CKTopicPartition(source, 0)], timeout=10)
            assert tp.offset < 0
        finally:
            uncommitted.close()
        p.commit_transaction(30)
        assert _committed(broker, group, source, consumer) == 10
        assert _committed(broker, group, source) == 10

        transaction(commit=False)  # records 10-19
        assert _committed(broker, group, source, consumer) == 10
        consumer.seek(CKTopicPartition(source, 0, 10))  # the aborted records, again
        transaction(commit=True)
        assert _committed(broker, group, source, consumer) == 20
    finally:
        p.close(30)
        consumer.close()
    # the aborted transaction's copies of out-in-10..19 are hidden: each is read once, in order
    out = [b"out-in-%d" % i for i in range(20)]
    assert_delivered(read(broker, sink, 1, 20, READ_COMMITTED), out)
