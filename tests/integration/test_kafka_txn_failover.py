"""Transactions across a failure on a three-broker Apache Kafka cluster (replication factor 3,
``min.insync.replicas=2``, ``__transaction_state`` with 4 partitions, replication factor 3 and
``transaction.state.log.min.isr=2``): the transaction coordinator's broker killed (SIGKILL)
between a transaction's last send and its commit, or paused and then killed once the commit's
EndTxn sits unread in its socket buffer, and started again later (``tests/tools/faults_txn.py``:
``txn-coordinator-killed``, ``txn-coordinator-killed-mid-commit``), with cproducer, librdkafka and
Java's producer.

The promise, Java's (KafkaProducer's javadoc of ``commitTransaction``) and librdkafka's
(``commit_transaction``): the commit either completes, once another broker leads the
transaction's ``__transaction_state`` partition and has loaded its state (the client finds the
new coordinator when the old one's connection fails or it answers NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE), or raises an error after which the transaction is aborted; a timeout
is retried by calling commit again. The producer goes on with later transactions without a
restart. Read back by read_committed readers, librdkafka's and Java's KafkaConsumer: every
transaction entirely visible or not at all, every committed one's records exactly once and in
order, no record of an aborted transaction (the load aborts every 5th transaction itself, its
records flushed first: they are in the log).

The cluster's brokers are fenced 4 s after their last heartbeat (``broker.session.timeout.ms``,
9 s by default): the commit's stall (the kill to the held transaction's outcome) is about that
plus the election and the state's load; it is printed, not asserted."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.tools.apache_kafka import ApacheKafkaCluster
from tests.tools.faults_txn import (
    ABORTED,
    CLUSTER_PROPERTIES,
    COMMITTED,
    FAULT,
    FAULT_MID_COMMIT,
    TxnLoadResult,
    TxnVerdict,
    coordinator_of,
    format_txn_table,
    run_txn_fault,
)

pytestmark = [pytest.mark.kafka, pytest.mark.cluster]


@pytest.fixture(scope="module")
def cluster() -> Iterator[ApacheKafkaCluster]:
    """Dead brokers fenced after 4 s (``faults_txn.CLUSTER_PROPERTIES``)."""
    with ApacheKafkaCluster(3, properties=CLUSTER_PROPERTIES) as c:
        yield c


@pytest.mark.parametrize("client", ["cproducer", "librdkafka", "java"])
@pytest.mark.parametrize("fault", [FAULT, FAULT_MID_COMMIT])
def test_coordinator_killed_no_half_transaction(
    cluster: ApacheKafkaCluster, fault: str, client: str
) -> None:
    """The held transaction commits or is aborted after an abortable error (never a fatal
    error); later transactions commit, with the coordinator dead and once it is back; the
    read_committed readers see no half transaction, no aborted record, every committed record
    once, in order. The peers run the same test: the assertions hold for the clients users
    trust."""
    run = run_txn_fault(cluster, client, name=fault)
    m = run.measured
    print(
        f"\n{format_txn_table([run])}\n(held transaction {m['held_txn']}: {m['held_outcome']}, "
        f"errors {m['held_errors']}; coordinator {m['victim']} -> {m['new_coordinator']}; "
        f"killed {m['killed_after_s']:.2f} s after the failure with {m['in_flight_bytes']} bytes "
        f"unread; first later commit {m['recovered_s']} s after it; {run.seconds:.0f} s)"
    )
    if fault == FAULT_MID_COMMIT:  # the commit's request was out when the broker died
        assert m["in_flight_bytes"], m
    result = run.result
    assert isinstance(result, TxnLoadResult)
    assert result.fatal is None, f"{client}: fatal {result.fatal}: {result.txns[m['held_txn']]}"
    assert m["held_outcome"] in (COMMITTED, ABORTED), m
    if m["held_outcome"] == ABORTED:  # only after the abortable error the commit raised
        assert m["held_errors"], m
    # the coordinator moved to a broker that was alive, and the producer found it
    assert m["new_coordinator"] is not None and m["new_coordinator"] != m["victim"], m
    assert m["recovered_s"] is not None, f"{client}: no transaction committed after the kill"
    assert m["committed_after_restart"], f"{client}: none committed after the broker came back"
    for reader, v in (("librdkafka", m["txn_verdict"]), ("Java", m["java_txn_verdict"])):
        assert isinstance(v, TxnVerdict)
        assert v.committed >= 7, (reader, v)  # a couple before the kill, 3 + 3 after it
        assert v.unended == 0, (reader, v)
        assert v.half_visible == 0, f"{client}, read by {reader}: half transactions: {v}"
        # the application aborted every 5th transaction: records in the log, none visible
        assert v.aborted_written > 0, (reader, v)
        assert v.aborted_visible == 0, f"{client}, read by {reader}: aborted records seen: {v}"
        assert (v.lost, v.duplicated, v.reordered) == (0, 0, 0), (reader, v)
        assert v.visible == v.records_committed, (reader, v)
    for reader, rv in (("librdkafka", run.verdict), ("Java", run.java_verdict)):
        # record by record: committed ones at the offsets their leaders gave them
        assert rv.clean and rv.failed_but_written == 0, (reader, rv)
        assert rv.acked + rv.failed == rv.sent, (reader, rv)
    # the cluster is whole again: the next run starts on three brokers
    assert all(n.running for n in cluster.nodes.values())
    assert coordinator_of(cluster, m["transactional_id"], 30) in (1, 2, 3)
