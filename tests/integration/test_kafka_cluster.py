"""A three-broker Apache Kafka cluster (``ApacheKafkaCluster(3)``: replication factor 3,
``min.insync.replicas=2``): the producer with its defaults (idempotence, ``acks=all``) while the
leader of a partition is killed (SIGKILL) mid-stream and started again, beside librdkafka and
Java's producer (``tests/tools/cluster_faults.py``: ``leader-killed``), and the cluster fixture
itself (a killed node keeps its data; stop/close leaves no Java process).

What the kill shows: the records of the killed leader's partitions wait (their connection is gone,
and Metadata keeps naming the dead broker until the controller fences it at
``broker.session.timeout.ms``, 9 s by default), then go to the new leader; with ``acks=all`` the
other partitions wait too, as the killed broker stays in their in-sync replicas until it is
fenced. Every record is acknowledged without error, at the offset it is found at, and is in the
topic exactly once, in the order it was sent, for librdkafka and for Java's KafkaConsumer alike.
The stall (the kill to the next acknowledgement) is printed, not asserted."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Iterator, List

import pytest

from cproducer import KafkaProducer
from cproducer.localbroker import request
from cproducer.protocol import MetadataRequest
from tests.integration.readback import read_back
from tests.tools.apache_kafka import ApacheKafkaCluster
from tests.tools.cluster_faults import assert_clean, format_table, run_fault

pytestmark = [pytest.mark.kafka, pytest.mark.cluster]

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


@pytest.mark.parametrize("client", ["cproducer", "librdkafka", "java"])
def test_leader_killed_mid_stream_every_record_once_in_order(
    cluster: ApacheKafkaCluster, client: str
) -> None:
    """Idempotence on (Java's and cproducer's default, asked of librdkafka): the leader of
    partition 0 killed mid-stream and started again loses, duplicates and reorders nothing, and
    fails no record, read back by librdkafka and by Java's KafkaConsumer. The peers run the same
    test: the assertions hold for the clients users trust."""
    run = run_fault(cluster, "leader-killed", client)
    assert_clean(run)
    assert run.stall_s is not None, (
        f"{client}: no record of partition 0 acknowledged after the kill"
    )
    print(f"\n{format_table([run])}\n(stall of any partition: {run.measured['stall_any_s']:.2f} s)")
    # the killed broker is back: every broker's Metadata lists it
    victim = run.measured["victim"]
    assert cluster.nodes[victim].running
    for node in (1, 2, 3):
        assert _broker_ids(cluster, node) == [1, 2, 3], node


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
