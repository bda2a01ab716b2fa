"""TRANSACTION_ABORTABLE (error 120, KIP-890 part 1): the broker says the transaction cannot
commit; the client makes it abortable (Java's TransactionManager: abortableError), the
application aborts and goes on with the next transaction. The virtual cluster answers EndTxn or
Produce with the error; librdkafka runs the same test as a check of the test itself.

The read back: a read_uncommitted reader sees the committed records and the aborted ones the
broker got (not those of the failed Produce); a read_committed one the committed records only on
Apache Kafka, the aborted ones too on Tansu, which does not hide them (see
test_transactions.py)."""

from __future__ import annotations

import time
from typing import Any, Callable, List

import pytest
from confluent_kafka import KafkaException
from confluent_kafka import Producer as ConfluentProducer

from cproducer import KafkaProducer, errors
from cproducer.localbroker import LocalBroker
from tests.integration.conftest import is_tansu
from tests.integration.readback import assert_delivered, read_back
from tests.tools.virtual_cluster import END_TXN, VirtualCluster

TRANSACTION_ABORTABLE = 120
READ_UNCOMMITTED = {"isolation.level": "read_uncommitted"}


class Transactional:
    """init/begin/send/commit/abort on our producer or librdkafka's; ``commit`` returns
    "abortable" when the client says the transaction must be aborted."""

    def __init__(self, kind: str, bootstrap: str) -> None:
        self.kind = kind
        txn_id = f"abortable-{kind}-{time.time_ns()}"
        if kind == "cproducer":
            self.p: Any = KafkaProducer(
                bootstrap_servers=bootstrap, transactional_id=txn_id, retry_backoff_ms=20
            )
        else:
            self.p = ConfluentProducer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
        self.p.init_transactions(10)

    def send(self, topic: str, values: List[bytes], partition: int) -> None:
        for v in values:
            if self.kind == "cproducer":
                self.p.send(topic, v, partition=partition)
            else:
                self.p.produce(topic, v, partition=partition)

    def commit(self) -> str:
        if self.kind == "cproducer":
            try:
                self.p.commit_transaction(10)
            except errors.TransactionAbortableError:
                return "abortable"
            return "committed"
        try:
            self.p.commit_transaction(10)
        except KafkaException as exc:
            assert exc.args[0].txn_requires_abort(), exc
            return "abortable"
        return "committed"

    def close(self) -> None:
        if self.kind == "cproducer":
            self.p.close()
        else:
            self.p.flush(10)


def _one_doomed_transaction(
    kind: str,
    broker: LocalBroker,
    topic: str,
    inject: Callable[[VirtualCluster], None],
    written: bool,
    next_transaction: bool = True,
) -> None:
    """A committed transaction, one made abortable by ``inject`` (its records ``written`` to the
    broker or not) and aborted, then (``next_transaction``) another committed one."""
    with VirtualCluster(broker.bootstrap_servers, 3) as vc:
        t = Transactional(kind, vc.bootstrap_servers)
        try:
            t.p.begin_transaction()
            t.send(topic, [b"before-%d" % i for i in range(10)], 0)
            assert t.commit() == "committed"
            t.p.begin_transaction()
            inject(vc)
            t.send(topic, [b"doomed-%d" % i for i in range(10)], 0)
            assert t.commit() == "abortable"
            assert vc.injected_answers == 1
            t.p.abort_transaction(10)
            if next_transaction:
                t.p.begin_transaction()
                t.send(topic, [b"after-%d" % i for i in range(10)], 0)
                assert t.commit() == "committed"
        finally:
            t.close()
    committed = [b"before-%d" % i for i in range(10)]
    if next_transaction:
        committed += [b"after-%d" % i for i in range(10)]
    aborted = [b"doomed-%d" % i for i in range(10)] if written else []
    everything = read_back(
        broker.bootstrap_servers, topic, 1, len(committed + aborted), config=READ_UNCOMMITTED
    )
    assert sorted(r.value or b"" for r in everything) == sorted(committed + aborted)
    # one partition, in send order: before, doomed (when written), after
    doomed = [b"doomed-%d" % i for i in range(10)]
    sent = committed[:10] + doomed + committed[10:]
    assert_delivered(everything, sent, may_be_missing=doomed, context="read_uncommitted")
    # read_committed: the aborted records hidden (Tansu-only: shown)
    visible = committed + aborted if is_tansu(broker) else committed
    records = read_back(broker.bootstrap_servers, topic, 1, len(visible))
    assert sorted(r.value or b"" for r in records) == sorted(visible)
    assert_delivered(records, sent, may_be_missing=doomed, context="read_committed")


@pytest.mark.parametrize("kind", ["cproducer", "librdkafka"])
def test_end_txn_answered_transaction_abortable(
    broker: LocalBroker, new_topic: Callable[..., str], kind: str
) -> None:
    """The commit's EndTxn is answered TRANSACTION_ABORTABLE (node 0 is the coordinator)."""
    _one_doomed_transaction(
        kind,
        broker,
        new_topic(1),
        lambda vc: vc.inject_txn_errors(0, END_TXN, TRANSACTION_ABORTABLE, count=1),
        written=True,
    )


@pytest.mark.parametrize("kind", ["cproducer", "librdkafka"])
def test_produce_answered_transaction_abortable(
    broker: LocalBroker, new_topic: Callable[..., str], kind: str
) -> None:
    """A Produce request of the transaction is answered TRANSACTION_ABORTABLE (node 0 leads
    partition 0): its records fail, the transaction can only be aborted, and the next one
    commits: the failed batch's sequence numbers are taken back (Java's
    adjustSequencesDueToFailedBatch) or the epoch is bumped. librdkafka 2.16 keeps the sequence
    numbers and its next transaction fails with OUT_OF_ORDER_SEQUENCE_NUMBER, so it is checked
    up to the abort only."""
    _one_doomed_transaction(
        kind,
        broker,
        new_topic(1),
        lambda vc: vc.inject_produce_errors(0, TRANSACTION_ABORTABLE, count=1),
        written=False,
        next_transaction=kind == "cproducer",
    )
