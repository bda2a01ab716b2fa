"""Transactions version 2 (KIP-890 part 2) on Apache Kafka, and version 1 beside it: one broker
at a time, formatted with ``transaction.version`` 1 or 2 (``StorageTool format --feature``; 2 is
Kafka 4.4's default).

Version 2: the producer reads the level from the brokers' ApiVersions answers, sends Produce v12
without AddPartitionsToTxn, offsets with TxnOffsetCommit v5 without AddOffsetsToTxn, and EndTxn
v5, whose coordinator bumps the epoch at the end of each transaction and answers the new one.
The log shows it: each transaction marker is written under its transaction's epoch + 1, and the
next transaction's records under that epoch. Java's KafkaProducer (``tests/java/
SeqTxnProducer.java``) on the same broker writes the same pattern; version 1 leaves every epoch
as it is, for both. librdkafka reads both producers' topics back read_committed.

The defence against hanging transactions: a write of an ended transaction that arrives late,
under that transaction's epoch, is refused on version 2 (the epoch was bumped) while on version
1 it joins the next transaction of the producer, which commits it."""

from __future__ import annotations

import re
import uuid
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from cproducer import KafkaProducer, TopicPartition
from cproducer.localbroker import request
from cproducer.protocol import ErrorCode, ProduceRequest
from tests.integration.readback import assert_delivered, committed, read_back
from tests.tools.apache_kafka import ApacheKafka, start_java

pytestmark = pytest.mark.kafka

READ_COMMITTED = {"isolation.level": "read_committed"}
READ_UNCOMMITTED = {"isolation.level": "read_uncommitted"}
RECORDS_PER_TXN = 10


@pytest.fixture(scope="module", params=[1, 2], ids=["tv1", "tv2"])
def broker(request: pytest.FixtureRequest) -> Iterator[ApacheKafka]:
    """(Named as the suite's fixture, so that a failure prints this broker's log.)"""
    with ApacheKafka(features={"transaction.version": request.param}) as kafka:
        yield kafka


@pytest.fixture
def level(broker: ApacheKafka) -> int:
    return broker.node.features["transaction.version"]


def producer(broker: ApacheKafka, **kw: Any) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        transactional_id=f"txn-v2-{uuid.uuid4().hex[:8]}",
        **kw,
    )


# ------------------------------------------------------------------ the log, as Kafka dumps it
_BATCH = re.compile(r"baseOffset: (\d+) .*producerEpoch: (-?\d+) .*isControl: (true|false)")
_MARKER = re.compile(r"endTxnMarker: (COMMIT|ABORT)")


def log_batches(
    broker: ApacheKafka, partitions: List[Tuple[str, int]]
) -> Dict[Tuple[str, int], List[Tuple[str, int]]]:
    """Each partition's batches in offset order as (``data``/``COMMIT``/``ABORT``, producer
    epoch), read from its segment by Kafka's own DumpLogSegments (one JVM for all)."""
    segments = {
        str(broker.node.dir / "data" / f"{t}-{p}" / "00000000000000000000.log"): (t, p)
        for t, p in partitions
    }
    out = broker.run_tool(
        "org.apache.kafka.tools.DumpLogSegments", "--files", ",".join(segments), "--print-data-log"
    )
    found: Dict[Tuple[str, int], List[Tuple[str, int]]] = {}
    batches: List[Tuple[str, int]] = []
    for line in out.splitlines():
        if line.startswith("Dumping "):
            batches = found.setdefault(segments[line[len("Dumping ") :].strip()], [])
            continue
        m = _BATCH.search(line)
        if m:
            batches.append(("data" if m.group(3) == "false" else "control", int(m.group(2))))
        elif batches and batches[-1][0] == "control":
            marker = _MARKER.search(line)
            if marker:
                batches[-1] = (marker.group(1), batches[-1][1])
    assert set(found) == set(partitions), out[-2000:]
    return found


def transactions_in_log(batches: List[Tuple[str, int]]) -> List[Tuple[str, int, int]]:
    """Each transaction of one producer as (its marker, its records' epoch, the marker's)."""
    out: List[Tuple[str, int, int]] = []
    data_epoch = None
    for kind, epoch in batches:
        if kind == "data":
            assert data_epoch in (None, epoch), f"two epochs in one transaction: {batches}"
            data_epoch = epoch
        else:
            assert data_epoch is not None and kind in ("COMMIT", "ABORT"), batches
            out.append((kind, data_epoch, epoch))
            data_epoch = None
    return out


def assert_epochs_of(level: int, txns: List[Tuple[str, int, int]], who: str) -> None:
    """Version 2: each marker one epoch past its records, the next transaction at the marker's
    epoch; version 1: one epoch throughout (no abortable error made the producer bump it)."""
    bump = 1 if level >= 2 else 0
    for (_, data, marker), after in zip(txns, txns[1:] + [None]):  # type: ignore[operator]
        assert marker == data + bump, f"{who}: {txns}"
        if after is not None:
            assert after[1] == marker, f"{who}: {txns}"


# ------------------------------------------------------------------ Java's producer
def run_java_transactions(bootstrap: str, topic: str, txns: int) -> List[Tuple[int, str]]:
    """SeqTxnProducer: transactions of RECORDS_PER_TXN records over 2 partitions, every third
    aborted, until ``txns`` have ended; (txn, "C"/"K") in order."""
    proc, stderr, drain = start_java(
        "SeqTxnProducer",
        [bootstrap, topic, "2", str(RECORDS_PER_TXN), "20", "3",
         f"transactional.id=java-{uuid.uuid4().hex[:8]}"],
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    ended: List[Tuple[int, str]] = []
    problems: List[str] = []
    try:
        for line in proc.stdout:
            kind, *fields = line.split()
            if kind in ("C", "K"):
                ended.append((int(fields[0]), kind))
                if len(ended) == txns:
                    proc.stdin.close()  # the JVM ends after the transaction under way
            elif kind in ("E", "X", "N", "F", "Q"):
                problems.append(line.strip())
    finally:
        proc.wait(60)
        drain.join(5)
    assert proc.returncode == 0 and not problems, (problems, "".join(stderr)[-3000:])
    return ended


def test_transactions_read_back_and_their_markers_beside_javas_producer(
    broker: ApacheKafka, level: int, new_topic: Callable[..., str]
) -> None:
    ours, theirs = new_topic(2), new_topic(2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    p = producer(broker)
    tm = p._transaction_manager
    assert tm is not None
    sent: List[bytes] = []
    epochs: List[int] = []
    try:
        p.init_transactions(30)
        for txn, commit in enumerate((True, False, True)):
            p.begin_transaction()
            assert tm.is_transaction_v2_enabled() == (level >= 2)
            epochs.append(tm.producer_id_and_epoch[1])
            values = [b"ours-%d-%d" % (txn, i) for i in range(RECORDS_PER_TXN)]
            for i, v in enumerate(values):
                p.send(ours, v, partition=i % 2)
            if txn == 2:  # offsets too (version 2: TxnOffsetCommit v5 alone)
                p.send_offsets_to_transaction({TopicPartition(ours, 0): 5}, group)
            p.flush(30)  # the aborted records reach the log too: only the marker hides them
            if commit:
                p.commit_transaction(30)
                sent += values
            else:
                p.abort_transaction(30)
    finally:
        p.close(30)
    bump = 1 if level >= 2 else 0
    assert epochs == [epochs[0], epochs[0] + bump, epochs[0] + 2 * bump]
    assert committed(broker.bootstrap_servers, group, ours) == 5

    java_ended = run_java_transactions(broker.bootstrap_servers, theirs, 3)
    java_sent = [
        b"value-%d" % (txn * RECORDS_PER_TXN + i)
        for txn, kind in java_ended
        if kind == "C"
        for i in range(RECORDS_PER_TXN)
    ]
    assert [k for _, k in java_ended[:3]] == ["C", "C", "K"]

    records = read_back(broker.bootstrap_servers, ours, 2, len(sent), config=READ_COMMITTED)
    to = [i % 2 for i in range(RECORDS_PER_TXN)]
    assert_delivered(records, sent, partitions=to * 2, context="ours, read_committed")
    records = read_back(broker.bootstrap_servers, theirs, 2, len(java_sent), config=READ_COMMITTED)
    java_to = [int(v.split(b"-")[1]) % 2 for v in java_sent]
    assert_delivered(records, java_sent, partitions=java_to, context="Java's, read_committed")

    logs = log_batches(broker, [(t, p) for t in (ours, theirs) for p in (0, 1)])
    for partition in (0, 1):
        our_txns = transactions_in_log(logs[(ours, partition)])
        assert [kind for kind, _, _ in our_txns] == ["COMMIT", "ABORT", "COMMIT"]
        assert_epochs_of(level, our_txns, f"ours, partition {partition}")
        java_txns = transactions_in_log(logs[(theirs, partition)])
        assert [kind for kind, _, _ in java_txns] == [
            "COMMIT" if k == "C" else "ABORT" for _, k in java_ended
        ]
        assert_epochs_of(level, java_txns, f"Java's, partition {partition}")


def raw_produce(
    broker: ApacheKafka, topic: str, txn_id: str, pid: int, epoch: int, seq: int, value: bytes
) -> int:
    """One transactional batch of one record, sent as the producer's own connection would
    have sent it (Produce v12 on version 2, v11 on version 1): the error code."""
    builder = DefaultRecordBatchBuilder(2, 0, True, pid, epoch, seq, 1 << 20)
    builder.append(0, 0, None, value, [])
    req = ProduceRequest(-1, 10000, {topic: [(0, builder.build())]}, txn_id)
    version = 12 if broker.node.features["transaction.version"] >= 2 else 11
    resp = request(broker.host, broker.port, req, version, timeout=15)
    return int(resp.responses[(topic, 0)].error_code)


def test_a_late_write_of_an_ended_transaction_is_refused_on_version_2_only(
    broker: ApacheKafka, level: int, new_topic: Callable[..., str]
) -> None:
    """Transaction 1 writes sequence 0 of partition 0 and commits; transaction 2 writes the
    partition too and is open. A batch of transaction 1 that was delayed on the way (its epoch,
    its next sequence) arrives now. Version 1: same epoch, the partition in a transaction, so
    the broker writes it, and transaction 2's commit commits it. Version 2: its epoch ended
    with transaction 1, and the broker refuses it."""
    topic = new_topic(1)
    p = producer(broker)
    tm = p._transaction_manager
    assert tm is not None and tm.transactional_id is not None
    try:
        p.init_transactions(30)
        p.begin_transaction()
        pid, first_epoch = tm.producer_id_and_epoch
        p.send(topic, b"txn-1", partition=0).get(30)
        p.commit_transaction(30)
        p.begin_transaction()
        p.send(topic, b"txn-2", partition=0).get(30)
        # the late batch follows transaction 1's record in its epoch's sequence (version 1 goes
        # on with one sequence across transactions: transaction 2's record took 1)
        late_seq = 2 if level == 1 else 1
        code = raw_produce(broker, topic, tm.transactional_id, pid, first_epoch, late_seq, b"late")
        p.commit_transaction(30)
    finally:
        p.close(30)
    if level >= 2:
        assert code == ErrorCode.INVALID_PRODUCER_EPOCH
        expected = [b"txn-1", b"txn-2"]
    else:
        assert code == ErrorCode.NONE
        expected = [b"txn-1", b"txn-2", b"late"]
    records = read_back(broker.bootstrap_servers, topic, 1, len(expected), config=READ_COMMITTED)
    assert_delivered(records, expected, context=f"read_committed, version {level}")
    everything = read_back(
        broker.bootstrap_servers, topic, 1, len(expected), config=READ_UNCOMMITTED
    )
    assert_delivered(everything, expected, context=f"read_uncommitted, version {level}")
