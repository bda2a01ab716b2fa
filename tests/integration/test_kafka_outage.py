"""Outages of a three-broker Apache Kafka cluster (``ApacheKafkaCluster(3)``: replication factor
3, ``min.insync.replicas=2``) under the producer with its idempotent defaults, each beside
librdkafka and Java's producer (``tests/tools/faults_outage.py``), the topic read back by
librdkafka and by Java's KafkaConsumer:

- ``replicas-lost``: two of the three brokers killed. The survivor leads every partition alone in
  its ISR and answers NOT_ENOUGH_REPLICAS; the records are retried until ``delivery.timeout.ms``
  (10 s) and then fail with the client's timeout, none earlier; when the brokers are back the
  same producer's new records are acknowledged.
- ``cluster-restart``: every broker stopped, one started again on a new port. The clients go
  back to ``bootstrap.servers`` (KIP-899) and find the cluster again; meanwhile cproducer's and
  Java's ``send()`` wait up to ``max.block.ms`` for the topic's metadata, which a rebootstrap
  forgets, and fail the record after it; the records taken before that go when the cluster is
  back. librdkafka's ``produce()`` never waits: it queues every record.

Whatever fails, nothing acknowledged is lost, duplicated or reordered. Figures (stall, outage,
refusals) are printed, not asserted."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Dict, Iterator, List

import pytest

from cproducer import KafkaProducer
from tests.tools.apache_kafka import ApacheKafkaCluster
from tests.tools.cluster_faults import FaultRun, assert_clean, format_table, run_fault
from tests.tools.faults_outage import (
    DELIVERY_TIMEOUT,
    DELIVERY_TIMEOUT_MS,
    MAX_BLOCK_MS,
    METADATA_TIMEOUT,
    NOT_ENOUGH_REPLICAS,
    metadata_refusals,
    send_gaps,
)
from tests.tools.seq_load import LoadResult

pytestmark = [pytest.mark.kafka, pytest.mark.cluster]

CLIENTS = ["cproducer", "librdkafka", "java"]
PARTITIONS = 6  # the faults' default
# a batch's creation time against the load's record times: the clients stamp batches in whole
# ms, Java on the wall clock
CLOCK_SLACK_S = 0.05


@pytest.fixture(scope="module")
def cluster() -> Iterator[ApacheKafkaCluster]:
    with ApacheKafkaCluster(3) as c:
        yield c


def _report(run: FaultRun) -> None:
    extra = {
        k: round(v, 2) if isinstance(v, float) else v
        for k, v in run.measured.items()
        if k not in ("times", "leaders")
    }
    print(f"\n{format_table([run])}\n{extra}")


def _failed_runs(result: LoadResult, partitions: int) -> List[List[int]]:
    """Per partition, the runs of consecutive records (in sending order) that failed with the
    same error. A batch is records of one partition, consecutive, failed together with one
    error, and it was made when its first record was sent: the first record of the run holding
    it was sent no later."""
    runs: List[List[int]] = []
    for p in range(partitions):
        last_error = None
        for s in sorted(s for s in result.sent_at if s % partitions == p):
            error = result.acks[s][0].error
            if error is None:
                last_error = None
            elif error == last_error:
                runs[-1].append(s)
            else:
                runs.append([s])
                last_error = error
    return runs


class _Retries(logging.Handler):
    """The errors cproducer's Sender retried a batch on (its debug log)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.errors: Counter = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("retrying a batch"):
            for arg in record.args or ():
                if isinstance(arg, BaseException):
                    self.errors[type(arg).__name__] += 1


@pytest.mark.parametrize("client", CLIENTS)
def test_two_replicas_lost_records_retried_until_delivery_timeout_then_flow_again(
    cluster: ApacheKafkaCluster, client: str
) -> None:
    """Two of three replicas killed for longer than delivery.timeout.ms (10 s), then started
    again, idempotence on (librdkafka asked for it).

    Each client promises the same (Java: NOT_ENOUGH_REPLICAS is retriable, and a batch past
    delivery.timeout.ms fails with TimeoutException "Expiring N record(s) ... since batch
    creation"; librdkafka: "Local: Message timed out"): records fail only with the timeout,
    never before delivery.timeout.ms from the creation of their batch, and the records sent once
    the ISR is back at min.insync.replicas are all acknowledged, on every partition. A
    NOT_ENOUGH_REPLICAS answer that comes back once a batch's delivery.timeout.ms has passed is
    that batch's error instead (Java's Sender.canRetry): allowed, at that time only. Nothing
    acknowledged is lost, duplicated or reordered.

    librdkafka differs by design in one point: once records time out its idempotent producer
    bumps the epoch, and records it had sent before may be written again, so the topic can hold
    duplicates (librdkafka issue 4953: "it can have duplications in case messages time out
    because the epoch needs to be bumped"). For it the test asserts the rest (no acknowledged
    record lost or at another offset, nothing left unfinished) and prints the duplicates."""
    retries = _Retries()
    sender_log = logging.getLogger("cproducer.producer.internals.sender")
    level = sender_log.level
    sender_log.addHandler(retries)
    sender_log.setLevel(logging.DEBUG)
    try:
        run = run_fault(cluster, "replicas-lost", client)
    finally:
        sender_log.removeHandler(retries)
        sender_log.setLevel(level)
    _report(run)
    if client == "librdkafka":
        for v in (run.verdict, run.java_verdict):
            assert not (v.lost or v.unfinished or v.wrong_offsets), v
            assert v.acked + v.failed == v.sent, v
        print(f"librdkafka: {run.verdict.duplicated} duplicated, {run.verdict.reordered} reordered")
    else:
        assert_clean(run, errors_allowed=True)
    result, times = run.result, run.measured["times"]
    assert not result.refused, result.refused[:5]

    failed = result.errors()
    kinds = Counter(
        "timeout"
        if DELIVERY_TIMEOUT.search(e)
        else "not enough replicas"
        if NOT_ENOUGH_REPLICAS.search(e)
        else e
        for _, e in failed
    )
    print(f"failures: {dict(kinds)}; e.g. {failed[0][1] if failed else None}")
    assert kinds["timeout"] > 0, kinds  # the outage outlasted delivery.timeout.ms
    assert set(kinds) <= {"timeout", "not enough replicas"}, kinds

    # none before delivery.timeout.ms
    delivery_s = DELIVERY_TIMEOUT_MS / 1000
    early = []
    for seqs in _failed_runs(result, PARTITIONS):
        made = result.sent_at[seqs[0]]
        early += [
            (s, round(result.acks[s][0].at - made, 3), result.acks[s][0].error)
            for s in seqs
            if result.acks[s][0].at < made + delivery_s - CLOCK_SLACK_S
        ]
    assert not early, f"{len(early)} records failed before delivery.timeout.ms: {early[:5]}"

    # the same producer goes on once the ISR is back at min.insync.replicas
    after = [s for s, t in list(result.sent_at.items()) if t > times["writable"]]
    assert after
    not_acked = [(s, result.acks[s][0].error) for s in after if result.acks[s][0].error]
    assert not not_acked, not_acked[:5]
    assert {result.acks[s][0].partition for s in after} == set(range(PARTITIONS))
    if client == "cproducer":
        print(f"batches retried on: {dict(retries.errors)}")
        assert (
            retries.errors["NotEnoughReplicasError"]
            + retries.errors["NotEnoughReplicasAfterAppendError"]
        ), retries.errors


@pytest.mark.parametrize("client", CLIENTS)
def test_whole_cluster_restarted_with_a_broker_on_a_new_port(
    cluster: ApacheKafkaCluster, client: str
) -> None:
    """Every broker stopped; the last one (it leads every partition when back) gets a new port;
    the cluster stays down for max.block.ms (3 s) and more, then starts again, that broker
    first.

    cproducer and Java (metadata.recovery.strategy=rebootstrap, their default) give up the
    brokers they knew for bootstrap.servers, which forgets the topic's partitions: a send() then
    waits for them up to max.block.ms and fails the record with "... not present in metadata
    after 3000 ms" (Java's through the callback, cproducer's by raising): at least one did, during
    the outage. librdkafka differs by design: produce() never waits, nothing is refused. The
    records the clients took all go when the cluster is back (delivery.timeout.ms is 120 s): no
    other failure. Once a record sent after every broker is back is acknowledged (the client
    has the topic's metadata again), every record sent after it is, on every partition: the
    moved broker led them all when the others started, and bootstrap.servers names its old
    port only."""
    run = run_fault(cluster, "cluster-restart", client)
    _report(run)
    assert_clean(run, errors_allowed=True)
    result, m = run.result, run.measured
    times: Dict[str, float] = m["times"]

    refusals = metadata_refusals(result)
    during = [r for r in refusals if r.at >= times["stop"]]
    print(
        f"refused on metadata: {len(during)} during the outage (from "
        f"{[round(r.at - times['down'], 2) for r in during[:8]]} s after the last stop), "
        f"{len(refusals) - len(during)} before it; longest pauses between sends: "
        f"{[round(g, 2) for _, g in send_gaps(result, times['stop'])[:5]]} s"
    )
    # the only failures: records refused for want of metadata, after max.block.ms
    other: List[Any] = [e for _, _, e in result.refused if not METADATA_TIMEOUT.search(e)]
    other += [e for _, e in result.errors() if not METADATA_TIMEOUT.search(e)]
    assert not other, other[:5]
    for r in refusals:
        waited = METADATA_TIMEOUT.search(r.error)
        assert waited and int(waited.group(1)) == MAX_BLOCK_MS, r
    if client == "librdkafka":
        assert not refusals
    else:
        assert during, "no send() waited for metadata while the cluster was down"

    # back: from the first acknowledgement of a record sent after the restart, every new record
    # acknowledged, on every partition
    assert m["resume_s"] is not None, "no record sent after the restart acknowledged"
    flowing = times["ready"] + m["resume_s"]
    after = [s for s, t in list(result.sent_at.items()) if t > flowing]
    assert after
    not_acked = [(s, result.acks[s][0].error) for s in after if result.acks[s][0].error]
    assert not not_acked, not_acked[:5]
    assert {result.acks[s][0].partition for s in after} == set(range(PARTITIONS))
    if client == "cproducer":
        assert m["rebootstraps"] > 0
    assert all(n.running for n in cluster.nodes.values())


def test_the_outages_leave_the_cluster_whole(cluster: ApacheKafkaCluster) -> None:
    """After the faults (this module's last test): every node runs, every partition of every
    topic has its full ISR, and a new producer reaches every broker through the bootstrap list
    of now (the moved broker's new port)."""
    assert all(n.running for n in cluster.nodes.values())
    cluster.wait_isr_full(60)
    topic = "outage-after"
    cluster.create_topic(topic, 3)
    with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers) as producer:
        futures = [producer.send(topic, b"%d" % p, partition=p) for p in range(3)]
        producer.flush(60)
    assert [f.get(1).partition for f in futures] == [0, 1, 2]
