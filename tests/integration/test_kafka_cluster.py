"""A three-broker Apache Kafka cluster (``ApacheKafkaCluster(3)``: replication factor 3,
``min.insync.replicas=2``): the producer with its defaults (idempotence, ``acks=all``) while the
leader of a partition is killed (SIGKILL) mid-stream and started again, and the cluster fixture
itself (a killed node keeps its data; stop/close leaves no Java process).

What the kill shows: the records of the killed leader's partitions wait (their connection is gone,
and Metadata keeps naming the dead broker until the controller fences it at
``broker.session.timeout.ms``, 9 s by default), then go to the new leader; with ``acks=all`` the
other partitions wait too, as the killed broker stays in their in-sync replicas until it is
fenced. Every record is acknowledged without error, at the offset it is found at, and is in the
topic exactly once, in the order it was sent, for librdkafka and for Java's KafkaConsumer alike.
The stall (the kill to the next acknowledgement) is printed, not asserted."""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from cproducer import KafkaProducer
from cproducer.localbroker import request
from cproducer.protocol import MetadataRequest
from tests.integration.readback import ConsumedRecord, by_partition, read_back, read_back_java
from tests.tools.apache_kafka import ApacheKafkaCluster

pytestmark = pytest.mark.kafka

PARTITIONS = 6


@pytest.fixture(scope="module")
def cluster() -> Iterator[ApacheKafkaCluster]:
    with ApacheKafkaCluster(3) as c:
        yield c


def _topic(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"


def _broker_ids(cluster: ApacheKafkaCluster, node_id: int) -> List[int]:
    """The broker ids that node ``node_id``'s Metadata answer lists."""
    port = cluster.nodes[node_id].listeners["PLAINTEXT"]
    md = request(cluster.host, port, MetadataRequest([], allow_auto_topic_creation=False), 7, 5.0)
    return sorted(b.id for b in md.brokers)


def _seq(record: ConsumedRecord) -> int:
    values = [v for k, v in record.headers if k == "seq"]
    assert len(values) == 1 and values[0] is not None, record
    return int(values[0])


def _check_read_back(
    who: str, records: List[ConsumedRecord], sent: Dict[int, int], cluster: ApacheKafkaCluster
) -> None:
    """Every sent record (seq -> partition) exactly once, in its partition, in sending order."""
    seqs = [_seq(r) for r in records]
    dupes = sorted(s for s, n in Counter(seqs).items() if n > 1)
    assert not dupes, f"{who}: records in the topic twice: {dupes[:20]}"
    missing = sorted(set(sent) - set(seqs))
    assert not missing, f"{who}: {len(missing)} records lost: {missing[:20]}\n{cluster.log_tail()}"
    assert set(seqs) == set(sent), f"{who}: records never sent: {sorted(set(seqs) - set(sent))}"
    for r in records:
        assert r.partition == sent[_seq(r)], f"{who}: seq {_seq(r)} in the wrong partition"
        assert r.value == b"value-%d" % _seq(r), f"{who}: value of seq {_seq(r)}"
    for partition, rs in by_partition(records).items():
        offsets = [r.offset for r in rs]
        order = [_seq(r) for r in rs]
        assert offsets == sorted(set(offsets)), f"{who}: partition {partition} offsets {offsets}"
        reordered = [(a, b) for a, b in zip(order, order[1:]) if b <= a]
        assert not reordered, f"{who}: partition {partition} out of order at {reordered[:10]}"


def test_leader_killed_mid_stream_every_record_once_in_order(
    cluster: ApacheKafkaCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="cproducer.producer.internals.sender")
    topic = _topic("leader-kill")
    cluster.create_topic(topic, PARTITIONS)
    victim = cluster.leader_of(topic, 0)
    lock = threading.Lock()
    sent: Dict[int, int] = {}  # seq -> partition
    sent_at: Dict[int, float] = {}  # seq -> monotonic time of its send()
    # seq -> (monotonic time of the callback, partition, offset, exception)
    acks: Dict[int, List[Tuple[float, int, int, Optional[BaseException]]]] = {}
    futures: List[Any] = []
    stop = threading.Event()
    send_errors: List[BaseException] = []

    def callback(seq: int, partition: int) -> Any:
        def done(md: Any, exc: Optional[BaseException]) -> None:
            now = time.monotonic()
            with lock:
                acks.setdefault(seq, []).append(
                    (now, partition, md.offset if exc is None else -1, exc)
                )

        return done

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)

    def produce() -> None:
        seq = 0
        try:
            while not stop.is_set():
                partition = seq % PARTITIONS
                sent_at[seq] = time.monotonic()
                fut = producer.send(
                    topic,
                    b"value-%d" % seq,
                    headers=[("seq", b"%d" % seq)],
                    partition=partition,
                    callback=callback(seq, partition),
                )
                sent[seq] = partition
                futures.append(fut)
                seq += 1
                if seq % 10 == 0:
                    time.sleep(0.01)  # about a thousand records a second
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            send_errors.append(exc)

    sender = threading.Thread(target=produce, name="leader-kill-producer")
    try:
        sender.start()
        time.sleep(2.0)
        killed_at = time.monotonic()
        cluster.kill(victim)
        # keep sending until a record of partition 0 sent after the kill is acknowledged (a new
        # leader elected), then a moment more
        deadline = killed_at + 60
        while time.monotonic() < deadline:
            with lock:
                done = [s for s, a in acks.items() if a[0][1] == 0 and sent_at[s] > killed_at]
            if done:
                break
            time.sleep(0.05)
        time.sleep(1.0)
        restart_at = time.monotonic()
        cluster.start_node(victim)
        restarted_at = time.monotonic()
        time.sleep(1.0)  # records go on while the restarted broker catches up as a follower
        stop.set()
        sender.join(30)
        assert not sender.is_alive()
        assert not send_errors, send_errors
        producer.flush(timeout=120)
    finally:
        stop.set()
        producer.close(timeout=30)

    assert len(futures) == len(sent) > 0
    assert all(f.is_done for f in futures)
    assert all(f.succeeded() for f in futures), "a record's future did not succeed"
    failed = [(seq, f.exception) for seq, f in enumerate(futures) if f.failed()]
    assert not failed, f"{len(failed)} records failed: {failed[:5]}\n{cluster.log_tail()}"
    assert sorted(acks) == sorted(sent), "a record was never completed"
    twice = [seq for seq, a in acks.items() if len(a) != 1]
    assert not twice, f"records completed twice: {twice[:20]}"
    errors = [(seq, a[0][3]) for seq, a in acks.items() if a[0][3] is not None]
    assert not errors, f"delivery errors: {errors[:5]}"

    # the stall: from the kill to the first acknowledgement of a record sent after it (a record
    # sent before may have been acknowledged just before the kill, its callback run just after).
    # With acks=all every partition whose in-sync replicas include the killed broker waits until
    # the controller fences it (broker.session.timeout.ms, 9 s) and drops it from the ISR, not
    # only the partitions it led.
    def stall(partitions: Any) -> float:
        times = [
            a[0][0] for s, a in acks.items() if a[0][1] in partitions and sent_at[s] > killed_at
        ]
        assert times, f"no record of partitions {partitions} sent after the kill acknowledged"
        return min(times) - killed_at

    print(
        f"\nkilled broker {victim} (leader of partition 0); {len(sent)} records; "
        f"stall of partition 0: {stall({0}):.2f} s from the kill to the first acknowledgement "
        f"of a record sent after it; of any partition: {stall(range(PARTITIONS)):.2f} s; "
        f"start_node took {restarted_at - restart_at:.2f} s"
    )

    # offsets the producer was told are the offsets the records are at
    told = {seq: (a[0][1], a[0][2]) for seq, a in acks.items()}
    for who, records in (
        (
            "librdkafka",
            read_back(cluster.bootstrap_servers, topic, PARTITIONS, len(sent), 60, settle_s=1.0),
        ),
        ("Java", read_back_java(cluster.bootstrap_servers, topic, PARTITIONS, len(sent), 60)),
    ):
        _check_read_back(who, records, sent, cluster)
        at = {_seq(r): (r.partition, r.offset) for r in records}
        wrong = [(s, told[s], at[s]) for s in sent if told[s] != at[s]]
        assert not wrong, f"{who}: acknowledged offsets differ from the topic's: {wrong[:10]}"

    # the killed broker is back: every broker's Metadata lists it, the topic has its leaders
    assert cluster.nodes[victim].running
    for node in (1, 2, 3):
        assert _broker_ids(cluster, node) == [1, 2, 3], node
    assert cluster.leader_of(topic, 0) in (1, 2, 3)


def test_killed_node_keeps_its_data(cluster: ApacheKafkaCluster) -> None:
    """A partition whose only replica is on the killed node: while the node is down it has no
    leader; started again on its data, the node leads it again with every record it held at
    the offsets it gave them."""
    topic = _topic("kill-keeps-data")
    # one replica: acks=all then needs min.insync.replicas=1 (the cluster's default is 2)
    cluster.create_topic(topic, 1, replication_factor=1, configs={"min.insync.replicas": "1"})
    node = cluster.leader_of(topic, 0)
    with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers) as producer:
        futures = [producer.send(topic, b"before-%d" % i, partition=0) for i in range(50)]
        producer.flush(timeout=30)
    offsets = [f.get(1).offset for f in futures]
    assert offsets == list(range(50))

    pid = cluster.nodes[node].process.pid  # type: ignore[union-attr]
    cluster.kill(node)
    assert not cluster.nodes[node].running and cluster.nodes[node].process is None
    assert not _alive(pid)
    cluster.start_node(node)
    assert cluster.nodes[node].running
    # the only replica, so the leader again once the node is back
    deadline = time.monotonic() + 30
    while cluster.leader_of(topic, 0) != node:
        assert time.monotonic() < deadline, f"partition without leader\n{cluster.log_tail()}"
        time.sleep(0.1)
    for other in (1, 2, 3):
        assert node in _broker_ids(cluster, other)

    records = read_back(cluster.bootstrap_servers, topic, 1, 50, 30, settle_s=0.5)
    assert [(r.offset, r.value) for r in records] == [(i, b"before-%d" % i) for i in range(50)]
    # and the node takes new records after the old ones
    with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers) as producer:
        assert producer.send(topic, b"after", partition=0).get(30).offset == 50


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _java_processes_under(root: Path) -> List[int]:
    """Processes whose command line names a path under ``root`` (a node's config, its log4j
    settings): the cluster's JVMs, whoever started them."""
    needle = str(root).encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if needle in f.read():
                    pids.append(int(entry))
        except OSError:
            pass
    return pids


def test_stop_and_close_leave_no_java_process(cluster: ApacheKafkaCluster) -> None:
    """Last in the module, on the module's cluster (its fixture's close() is then a no-op), with
    a broker killed first: stop() ends the nodes still running, close() removes the storage, and
    no JVM of the cluster is left (its processes reaped, none whose command line names its
    directory)."""
    root = cluster.root
    procs = {i: n.process for i, n in cluster.nodes.items()}
    pids = sorted(p.pid for p in procs.values() if p is not None)
    assert sorted(procs) == [1, 2, 3, 100] and len(pids) == 4
    assert sorted(_java_processes_under(root)) == pids
    cluster.kill(3)
    assert not cluster.nodes[3].running and cluster.nodes[3].process is None
    assert not _alive(procs[3].pid)  # type: ignore[union-attr]
    cluster.stop()
    for i, n in cluster.nodes.items():
        assert n.process is None and not n.running, i
        assert procs[i].poll() is not None, i  # type: ignore[union-attr]
    assert _java_processes_under(root) == []
    assert root.exists()  # stop() keeps the storage, close() removes it
    cluster.close()
    assert _java_processes_under(root) == []
    assert not root.exists()
