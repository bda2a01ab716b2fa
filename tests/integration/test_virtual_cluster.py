"""The producer against several (virtual) brokers: the VirtualCluster proxy (tests/tools) makes one
broker (Tansu or Apache Kafka) look like 3 nodes, each leading partitions p % 3. Read back with
librdkafka through it."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

from cproducer import KafkaProducer, errors
from cproducer.localbroker import LocalBroker
from cproducer.protocol import ErrorCode
from tests.integration.readback import assert_delivered, read_back
from tests.tools.virtual_cluster import ADD_PARTITIONS_TO_TXN, END_TXN, VirtualCluster

Calls = Dict[int, List[Tuple[Any, Optional[BaseException]]]]


def _recorder() -> Tuple[Calls, Callable[[int], Callable[[Any, Optional[BaseException]], None]]]:
    """Every completion of record i, as (metadata, exception), from any thread."""
    calls: Calls = {}
    lock = threading.Lock()

    def callback(i: int) -> Callable[[Any, Optional[BaseException]], None]:
        def done(md: Any, exc: Optional[BaseException]) -> None:
            with lock:
                calls.setdefault(i, []).append((md, exc))

        return done

    return calls, callback


def test_each_virtual_node_gets_the_batches_of_the_partitions_it_leads(broker: LocalBroker) -> None:
    topic = f"vc-{time.time_ns()}"
    broker.create_topic(topic, 6)
    with VirtualCluster(broker.bootstrap_servers, 3) as vc:
        with KafkaProducer(bootstrap_servers=vc.bootstrap_servers, linger_ms=1) as p:
            futures = [p.send(topic, b"v%d" % i, partition=i % 6) for i in range(600)]
            p.flush(30)
            leaders = {
                pi.partition: pi.leader.id for pi in p._metadata.fetch().partitions_for_topic(topic)
            }
        assert leaders == {i: i % 3 for i in range(6)}
        assert all(n > 0 for n in vc.produce_requests.values())
        assert {f.get(0).partition for f in futures} == set(range(6))
        records = read_back(vc.bootstrap_servers, topic, 6, 600)
    sent = [b"v%d" % i for i in range(600)]
    assert_delivered(records, sent, partitions=[i % 6 for i in range(600)])


def test_a_failed_node_partitions_move_and_every_record_lands_once(broker: LocalBroker) -> None:
    topic = f"vc-fail-{time.time_ns()}"
    broker.create_topic(topic, 3)
    calls, callback = _recorder()
    n = 6000
    with VirtualCluster(broker.bootstrap_servers, 3) as vc:
        p = KafkaProducer(
            bootstrap_servers=vc.bootstrap_servers,
            linger_ms=2,
            retry_backoff_ms=20,
            reconnect_backoff_ms=20,
            reconnect_backoff_max_ms=100,
            metadata_max_age_ms=5000,
        )
        try:
            for i in range(n):
                p.send(topic, b"%d" % i, key=b"k%d" % (i % 30), callback=callback(i))
                if i == n // 3:
                    # node 1 must have served requests before it fails (on a loaded machine
                    # the first third may still sit in the accumulator)
                    p.flush(60)
                    vc.fail_node(1)  # partition 1's leader: it moves to node 2
                if i % 200 == 0:
                    time.sleep(0.005)  # the stream spans the failure
            p.flush(60)
            moved = {
                pi.partition: pi.leader.id for pi in p._metadata.fetch().partitions_for_topic(topic)
            }
        finally:
            p.close(10)
        assert moved == {0: 0, 1: 2, 2: 2}
        assert vc.produce_requests[1] > 0  # node 1 was in use before it failed
        assert sorted(calls) == list(range(n))
        assert all(len(c) == 1 for c in calls.values()), "a record completed twice"
        errors = [c[0][1] for c in calls.values() if c[0][1] is not None]
        assert not errors, f"{len(errors)} records failed, e.g. {errors[0]!r}"
        records = read_back(vc.bootstrap_servers, topic, 3, n)
    assert_delivered(records, [b"%d" % i for i in range(n)])


def _send_all(vc: VirtualCluster, topic: str, n: int, partitions: int) -> Dict[int, Any]:
    calls, callback = _recorder()
    with KafkaProducer(
        bootstrap_servers=vc.bootstrap_servers, linger_ms=2, batch_size=2048, retry_backoff_ms=10
    ) as p:
        for i in range(n):
            p.send(topic, b"%d" % i, partition=i % partitions, callback=callback(i))
        p.flush(60)
    assert sorted(calls) == list(range(n))
    assert all(len(c) == 1 for c in calls.values()), "a record completed twice"
    return {i: c[0] for i, c in calls.items()}


def test_not_leader_answers_are_retried_and_every_record_lands_once(broker: LocalBroker) -> None:
    topic = f"vc-nl-{time.time_ns()}"
    broker.create_topic(topic, 3)
    with VirtualCluster(broker.bootstrap_servers, 3) as vc:
        vc.inject_produce_errors(1, ErrorCode.NOT_LEADER_OR_FOLLOWER, count=3)
        outcome = _send_all(vc, topic, 3000, 3)
        assert vc.injected_answers == 3
        failed = [exc for _md, exc in outcome.values() if exc is not None]
        assert not failed, f"{len(failed)} records failed, e.g. {failed[0]!r}"
        records = read_back(vc.bootstrap_servers, topic, 3, 3000)
    sent = [b"%d" % i for i in range(3000)]
    assert_delivered(records, sent, partitions=[i % 3 for i in range(3000)])


def test_a_non_retriable_error_fails_only_that_batch_and_the_rest_lands_in_order(
    broker: LocalBroker,
) -> None:
    topic = f"vc-inv-{time.time_ns()}"
    broker.create_topic(topic, 3)
    with VirtualCluster(broker.bootstrap_servers, 3) as vc:
        vc.inject_produce_errors(2, ErrorCode.INVALID_RECORD, count=1)  # not retriable
        outcome = _send_all(vc, topic, 3000, 3)
        failed = {i for i, (_md, exc) in outcome.items() if exc is not None}
        assert failed and all(i % 3 == 2 for i in failed)  # only partition 2's records
        assert all(isinstance(outcome[i][1], errors.InvalidRecordError) for i in failed)
        delivered = set(outcome) - failed
        records = read_back(vc.bootstrap_servers, topic, 3, len(delivered))
    assert sorted(int(r.value) for r in records) == sorted(delivered)
    # partition 2 is still in order: the sequences after the failed batch were renumbered
    assert_delivered(
        records,
        [b"%d" % i for i in range(3000)],
        partitions=[i % 3 for i in range(3000)],
        may_be_missing=[b"%d" % i for i in failed],
    )


def test_answers_later_than_request_timeout_are_retried_without_duplicates(
    broker: LocalBroker,
) -> None:
    """The broker has the batches; only their answers are late. The producer times the requests
    out, reconnects and sends the same batches again: idempotence must keep each record once."""
    topic = f"vc-slow-{time.time_ns()}"
    broker.create_topic(topic, 3)
    calls, callback = _recorder()
    n = 3000
    with VirtualCluster(broker.bootstrap_servers, 3) as vc:
        vc.delay_produce_answers(0, 1500, count=2)
        with KafkaProducer(
            bootstrap_servers=vc.bootstrap_servers,
            linger_ms=2,
            batch_size=4096,
            request_timeout_ms=500,
            delivery_timeout_ms=20000,
            retry_backoff_ms=20,
        ) as p:
            for i in range(n):
                p.send(topic, b"%d" % i, partition=i % 3, callback=callback(i))
                if i % 300 == 0:
                    time.sleep(0.01)
            p.flush(60)
            retries = p.metrics()["producer-metrics"]["record-retry-total"]
        assert vc.delayed_answers == 2
        assert retries > 0  # the late batches were sent again
        assert sorted(calls) == list(range(n))
        assert all(len(c) == 1 for c in calls.values()), "a record completed twice"
        failed = [c[0][1] for c in calls.values() if c[0][1] is not None]
        assert not failed, f"{len(failed)} records failed, e.g. {failed[0]!r}"
        records = read_back(vc.bootstrap_servers, topic, 3, n)
    sent = [b"%d" % i for i in range(n)]
    assert_delivered(records, sent, partitions=[i % 3 for i in range(n)])


def test_a_transaction_survives_the_loss_of_its_coordinator_node(broker: LocalBroker) -> None:
    """Node 0 is the transaction coordinator (FindCoordinator names the first live node) and the
    leader of partition 0. It fails in the middle of a transaction: the producer finds the new
    coordinator and leader, and the commit goes through with every record once."""
    topic = f"vc-txn-{time.time_ns()}"
    broker.create_topic(topic, 3)
    with VirtualCluster(broker.bootstrap_servers, 3) as vc:
        with KafkaProducer(
            bootstrap_servers=vc.bootstrap_servers,
            transactional_id=f"vc-tx-{time.time_ns()}",
            retry_backoff_ms=20,
            reconnect_backoff_ms=20,
            reconnect_backoff_max_ms=100,
        ) as p:
            p.init_transactions(10)
            p.begin_transaction()
            first = [p.send(topic, b"a%d" % i, partition=i % 3) for i in range(300)]
            p.flush(10)
            assert p._transaction_manager.coordinator.id == 0
            vc.fail_node(0)
            second = [p.send(topic, b"b%d" % i, partition=i % 3) for i in range(300)]
            p.commit_transaction(20)
            assert p._transaction_manager.coordinator.id == 1
            assert all(f.exception is None for f in first + second)
        records = read_back(vc.bootstrap_servers, topic, 3, 600)
    sent = [b"a%d" % i for i in range(300)] + [b"b%d" % i for i in range(300)]
    assert_delivered(records, sent, partitions=[i % 3 for i in range(300)] * 2)


def _transactional(vc: VirtualCluster) -> KafkaProducer:
    """A transactional producer on the virtual cluster, its transactions initialized."""
    p = KafkaProducer(
        bootstrap_servers=vc.bootstrap_servers,
        transactional_id=f"vc-tx-{time.time_ns()}",
        retry_backoff_ms=20,
    )
    p.init_transactions(10)
    return p


def test_end_txn_answered_concurrent_transactions_then_not_coordinator_still_commits(
    broker: LocalBroker,
) -> None:
    """EndTxn answered CONCURRENT_TRANSACTIONS (retry after a backoff), then NOT_COORDINATOR
    (look the coordinator up again, retry): the commit goes through and the records are there."""
    topic = f"vc-endtxn-{time.time_ns()}"
    broker.create_topic(topic, 3)
    with VirtualCluster(broker.bootstrap_servers, 3) as vc:
        with _transactional(vc) as p:
            p.begin_transaction()
            futures = [p.send(topic, b"%d" % i, partition=i % 3) for i in range(90)]
            vc.inject_txn_errors(0, END_TXN, ErrorCode.CONCURRENT_TRANSACTIONS, count=2)
            p.commit_transaction(10)
            assert vc.injected_answers == 2
            p.begin_transaction()
            futures += [p.send(topic, b"%d" % i, partition=i % 3) for i in range(90, 180)]
            vc.inject_txn_errors(0, END_TXN, ErrorCode.NOT_COORDINATOR, count=1)
            p.commit_transaction(10)
            assert vc.injected_answers == 3
            assert all(f.exception is None for f in futures)
        records = read_back(vc.bootstrap_servers, topic, 3, 180)
    sent = [b"%d" % i for i in range(180)]
    assert_delivered(records, sent, partitions=[i % 3 for i in range(180)])


def test_add_partitions_errors_retried_or_making_the_transaction_abortable(
    broker: LocalBroker,
) -> None:
    """AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS: retried, the commit goes through.
    Answered TOPIC_AUTHORIZATION_FAILED: the transaction is abortable, commit says so, the
    records fail, abort works, and the next transaction commits."""
    topic = f"vc-addp-{time.time_ns()}"
    broker.create_topic(topic, 3)
    with VirtualCluster(broker.bootstrap_servers, 3) as vc:
        with _transactional(vc) as p:
            vc.inject_txn_errors(
                0, ADD_PARTITIONS_TO_TXN, ErrorCode.CONCURRENT_TRANSACTIONS, count=2
            )
            p.begin_transaction()
            ok = [p.send(topic, b"ok-%d" % i, partition=i % 3) for i in range(30)]
            p.commit_transaction(10)
            assert vc.injected_answers == 2 and all(f.exception is None for f in ok)

            vc.inject_txn_errors(
                0, ADD_PARTITIONS_TO_TXN, ErrorCode.TOPIC_AUTHORIZATION_FAILED, count=1
            )
            p.begin_transaction()
            doomed = [p.send(topic, b"doomed-%d" % i, partition=0) for i in range(10)]
            with pytest.raises(errors.TransactionAbortableError, match="TopicAuthorization"):
                p.commit_transaction(10)
            with pytest.raises(errors.TransactionAbortableError):
                p.send(topic, b"refused", partition=0)
            p.abort_transaction(10)
            assert all(isinstance(f.exception, errors.TransactionAbortedError) for f in doomed)

            p.begin_transaction()
            after = [p.send(topic, b"after-%d" % i, partition=i % 3) for i in range(30)]
            p.commit_transaction(10)
            assert all(f.exception is None for f in after)
        records = read_back(vc.bootstrap_servers, topic, 3, 60)
    # the doomed records were never written: one read would be a record never sent
    sent = [b"ok-%d" % i for i in range(30)] + [b"after-%d" % i for i in range(30)]
    assert_delivered(records, sent, partitions=[i % 3 for i in range(30)] * 2)


def test_a_produce_error_in_a_transaction_leaves_no_sequence_gap(broker: LocalBroker) -> None:
    """A transaction's Produce request answered INVALID_RECORD: the broker wrote nothing, so
    after the abort the partition's next batch takes the failed batch's sequence numbers (Java's
    adjustSequencesDueToFailedBatch); it lands at once instead of being answered
    OUT_OF_ORDER_SEQUENCE_NUMBER until its delivery timeout."""
    topic = f"vc-seq-{time.time_ns()}"
    broker.create_topic(topic, 1)
    with VirtualCluster(broker.bootstrap_servers, 1) as vc:
        vc.bump_epochs_by_init()  # the abort is followed by an epoch bump, as in Java 4.x
        with _transactional(vc) as p:
            p.begin_transaction()
            p.send(topic, b"first", partition=0).get(10)
            vc.inject_produce_errors(0, 87, count=1)  # INVALID_RECORD: not retriable
            doomed = p.send(topic, b"doomed", partition=0)
            with pytest.raises(errors.InvalidRecordError):
                doomed.get(10)
            with pytest.raises(errors.TransactionAbortableError):
                p.commit_transaction(10)
            p.abort_transaction(10)
            p.begin_transaction()
            after = [p.send(topic, b"after-%d" % i, partition=0) for i in range(20)]
            p.commit_transaction(10)
            assert all(f.exception is None for f in after)
        records = read_back(vc.bootstrap_servers, topic, 1, 21)
    values = [r.value or b"" for r in records]
    assert b"doomed" not in values
    # "first" was in the aborted transaction: hidden from a read_committed reader (Tansu shows it)
    assert_delivered(
        records, [b"first"] + [b"after-%d" % i for i in range(20)], may_be_missing=[b"first"]
    )
    assert [v for v in values if v.startswith(b"after")] == [b"after-%d" % i for i in range(20)]
