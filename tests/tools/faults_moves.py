"""Controlled moves and network faults (``tests/tools/cluster_faults.py`` runs them).

Controlled moves: leadership goes elsewhere while the load runs, by a partition reassignment and
by a preferred-leader election, on every partition of the topic, and comes back.

- ``leader-moved``: each partition's replica list loses its leader (a reassignment: the
  controller makes the next replica leader), gets it back (another reassignment, the old list:
  the old leader rejoins as a follower) and a preferred-leader election hands it its leadership
  back. The clients speak the brokers' newest Produce version: a NOT_LEADER_OR_FOLLOWER answer
  names the new leader and its address (KIP-951, Produce v10+);
- ``leader-moved-v9``: the same with the brokers' ApiVersions answers capped at Produce v9 (the
  last version without those hints): the clients learn where a partition went from Metadata
  only.

Network faults:

- ``leader-paused``: the leader of partition 0 stops answering (SIGSTOP: its connections stay
  open) for longer than ``request.timeout.ms`` (5 s here), until the controller fences it
  (``broker.session.timeout.ms``), then resumes. A request in flight to it is given up by the
  client at ``request.timeout.ms`` (the client closes that connection) and retried, on the new
  leader once Metadata names it;
- ``connection-reset``: five times, the next Produce answer of partition 0's leader is dropped
  and the client's connection reset (RST) instead: the broker wrote the batch, the client never
  heard; its retry is a duplicate the broker recognises (idempotence) and answers with the
  offset it gave the first time.

The counts and the resets need the clients' traffic to pass through relays
(``tests/tools/kafka_front.py``: ``RelayedCluster``); ``leader-moved`` and ``leader-paused`` run on
a plain ``ApacheKafkaCluster`` too, without those figures (None), the others need the relays.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Iterable, List, Optional

from cproducer.localbroker import host_port, request
from cproducer.protocol import MetadataRequest
from cproducer.protocol.metadata import PartitionMetadata
from tests.tools.apache_kafka import ApacheKafkaCluster
from tests.tools.cluster_faults import fault
from tests.tools.kafka_front import METADATA, KafkaFront
from tests.tools.seq_load import Load

# the preferred-leader election (kafka-python's ElectionType.PREFERRED)
PREFERRED = 0
REQUEST_TIMEOUT_MS = 5000  # leader-paused: the clients' request.timeout.ms
# every wait below: long enough for a loaded 2-core machine, short of the load's flush timeout
WAIT_S = 90.0


def front_of(cluster: ApacheKafkaCluster) -> Optional[KafkaFront]:
    return getattr(cluster, "front", None)


def needs_front(cluster: ApacheKafkaCluster, name: str) -> KafkaFront:
    front = front_of(cluster)
    if front is None:
        raise RuntimeError(
            f"{name!r} needs the clients' traffic through relays: run it on "
            "tests.tools.kafka_front.RelayedCluster"
        )
    return front


def partitions_of(cluster: ApacheKafkaCluster, topic: str) -> Dict[int, PartitionMetadata]:
    """The topic's partitions as a running broker's Metadata shows them."""
    node = cluster.answering_broker()
    port = node.listeners["PLAINTEXT"]
    md = request(cluster.host, port, MetadataRequest([topic], False), 7, 10.0)
    return {p.partition: p for t in md.topics if t.name == topic for p in t.partitions}


def wait_until(what: str, check: Any, cluster: ApacheKafkaCluster, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except OSError:
            pass  # a broker between states: ask again
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout} s\n{cluster.log_tail(15)}")
        time.sleep(0.05)


def wait_whole(cluster: ApacheKafkaCluster, topic: str, timeout: float = WAIT_S) -> None:
    """Every node running and every partition of ``topic`` with all its replicas in sync."""
    for n in cluster.nodes.values():
        assert n.running, f"node {n.node_id} is down"
    rf = cluster.replication_factor

    def whole() -> bool:
        parts = partitions_of(cluster, topic)
        return bool(parts) and all(
            len(p.replica_ids) == rf and sorted(p.isr_ids) == sorted(p.replica_ids)
            for p in parts.values()
        )

    wait_until(f"{topic}: every replica in sync", whole, cluster, timeout)


def recovery(load: Load, since: float, partitions: Iterable[int]) -> Optional[float]:
    """From ``since`` until every one of ``partitions`` had a record sent after ``since``
    acknowledged: the slowest partition's wait (None: one never did within WAIT_S)."""
    worst = 0.0
    for p in partitions:
        stall = load.result.wait_ack_after(since, WAIT_S, partitions=[p])
        if stall is None:
            return None
        worst = max(worst, stall)
    return worst


def _admin(cluster: ApacheKafkaCluster) -> Any:
    from kafka.admin import KafkaAdminClient

    direct = ",".join(host_port(cluster.host, n.listeners["PLAINTEXT"]) for n in cluster.brokers)
    return KafkaAdminClient(
        bootstrap_servers=direct, client_id="faults-moves-admin", request_timeout_ms=30000
    )


def _reassign(admin: Any, topic: str, replicas: Dict[int, List[int]]) -> None:
    from kafka import TopicPartition

    out = admin.alter_partition_reassignments(
        {TopicPartition(topic, p): r for p, r in replicas.items()}, timeout_ms=30000
    )
    failed = {tp: e for tp, e in out.items() if e is not None}
    assert not failed, f"reassignment refused: {failed}"


def _reconnect(front: Optional[KafkaFront], load: Load, partitions: int) -> None:
    """Every client connection reset, and a record of every partition acknowledged after it:
    the client has connected again (and read the ApiVersions answers as they are now)."""
    if front is None:
        return
    at = time.monotonic()
    front.reset()
    assert recovery(load, at, range(partitions)) is not None, "no ack after the reconnection"


def leader_moves(
    cluster: ApacheKafkaCluster, load: Load, topic: str, produce_cap: Optional[int]
) -> Dict[str, Any]:
    front = front_of(cluster)
    parts = partitions_of(cluster, topic)
    n = len(parts)
    if front is not None:
        front.cap_produce(produce_cap)
    try:
        _reconnect(front, load, n)
        time.sleep(1.0)
        original = {p: list(m.replica_ids) for p, m in parts.items()}
        leaders = {p: m.leader_id for p, m in parts.items()}
        admin = _admin(cluster)
        try:
            started = time.monotonic()
            # 1. a reassignment takes each leader out of its partition's replicas: the controller
            # makes another replica leader (the replicas left are in sync: it completes at once)
            _reassign(
                admin, topic, {p: [r for r in rs if r != leaders[p]] for p, rs in original.items()}
            )
            reassigned_at = time.monotonic()
            wait_until(
                "leaders moved off",
                lambda: all(
                    m.leader_id not in (-1, leaders[p])
                    for p, m in partitions_of(cluster, topic).items()
                ),
                cluster,
            )
            recovery_reassign = recovery(load, reassigned_at, range(n))
            # 2. the old replica lists back: the old leaders rejoin as followers and catch up
            _reassign(admin, topic, original)
            wait_whole(cluster, topic)
            # 3. a preferred-leader election gives each partition back to its first replica
            elected = time.monotonic()
            admin.elect_leaders(PREFERRED, {topic: list(range(n))}, timeout_ms=30000)
            elected_at = time.monotonic()
            wait_until(
                "preferred leaders back",
                lambda: all(
                    m.leader_id == leaders[p] for p, m in partitions_of(cluster, topic).items()
                ),
                cluster,
            )
            recovery_elect = recovery(load, elected_at, range(n))
            time.sleep(1.0)  # the metadata refreshes a move asked for are counted too
            ended = time.monotonic()
        finally:
            admin.close()
    finally:
        if front is not None:
            front.cap_produce(None)
    wait_whole(cluster, topic)
    versions = (
        sorted({v for t, _n, v in list(front.versions) if started <= t < ended}) if front else []
    )
    # cproducer's count of the partitions it moved on a Produce answer's hint (its Sender's)
    sender = getattr(getattr(load, "producer", None), "_sender", None)
    return {
        "leader_hints": getattr(sender, "leader_hints_applied", None),
        "stall_s": max(recovery_reassign or 0.0, recovery_elect or 0.0)
        if recovery_reassign is not None and recovery_elect is not None
        else None,
        "recovery_reassign_s": recovery_reassign,
        "recovery_elect_s": recovery_elect,
        "elect_call_s": elected_at - elected,
        "metadata_requests": None if front is None else front.count(METADATA, started, ended),
        "produce_versions": versions,
        "window_s": ended - started,
    }


@fault("leader-moved", relayed=True)
def leader_moved(cluster: ApacheKafkaCluster, load: Load, topic: str) -> Dict[str, Any]:
    """Every partition's leader moved by a reassignment, then back by a preferred election, the
    clients taking KIP-951's leader hints.

    ``stall_s``: the slower of the two moves, each from the controller's answer to the last
    partition's first acknowledgement of a record sent after it (``recovery_reassign_s``,
    ``recovery_elect_s``); ``metadata_requests``: the client's Metadata requests from the first
    move until a second after the last recovery (a ``RelayedCluster`` only)."""
    return leader_moves(cluster, load, topic, None)


@fault("leader-moved-v9", relayed=True)
def leader_moved_v9(cluster: ApacheKafkaCluster, load: Load, topic: str) -> Dict[str, Any]:
    """``leader-moved`` with Produce capped at v9 (no leader hints): the clients learn of each
    move from Metadata only."""
    needs_front(cluster, "leader-moved-v9")
    return leader_moves(cluster, load, topic, 9)


@fault(
    "leader-paused",
    config={"request.timeout.ms": REQUEST_TIMEOUT_MS, "delivery.timeout.ms": 90000},
    relayed=True,
)
def leader_paused(cluster: ApacheKafkaCluster, load: Load, topic: str) -> Dict[str, Any]:
    """SIGSTOP of partition 0's leader past request.timeout.ms (5 s) until the controller
    fences it, then SIGCONT.

    librdkafka's request.timeout.ms is the broker's wait for the replicas only; its own wait for
    an answer is socket.timeout.ms (60 s by default), which a run of librdkafka sets to the
    same 5 s to be told the same thing.

    ``stall_s``: the pause to the first acknowledgement of a partition-0 record sent after it;
    ``noticed_s``: the pause to the client's closing its connection to the paused broker (its
    request timeout; a ``RelayedCluster`` only); ``fenced_s``: the pause to a Metadata answer
    naming another leader; ``paused_s``: how long it was stopped."""
    front = front_of(cluster)
    victim = cluster.leader_of(topic, 0)
    node = cluster.nodes[victim]
    time.sleep(1.0)
    paused_at = time.monotonic()
    node.pause()
    try:
        fenced: Optional[float] = None
        deadline = paused_at + WAIT_S
        # stopped until the controller has moved partition 0 away (its session expired), and at
        # least one and a half request timeouts
        while time.monotonic() < deadline:
            if fenced is None:
                try:
                    if cluster.leader_of(topic, 0) not in (-1, victim):
                        fenced = time.monotonic() - paused_at
                except (OSError, StopIteration):
                    pass
            if fenced is not None and time.monotonic() - paused_at > 1.5 * REQUEST_TIMEOUT_MS / 1e3:
                break
            time.sleep(0.05)
        resumed_at = time.monotonic()
    finally:
        node.resume()
    stall = load.result.wait_ack_after(paused_at, WAIT_S, partitions=[0])
    closes = (
        [t for t, n in list(front.client_closes) if n == victim and t > paused_at] if front else []
    )
    # the broker takes part again: registered, unfenced, its replicas back in sync
    cluster.wait_ready(WAIT_S)
    wait_whole(cluster, topic)
    return {
        "victim": victim,
        "stall_s": stall,
        "noticed_s": min(closes) - paused_at if closes else None,
        "noticed_before_resume": bool(closes) and min(closes) < resumed_at,
        "fenced_s": fenced,
        "paused_s": resumed_at - paused_at,
        "stall_any_s": _minus(load.result.first_ack_after(paused_at), paused_at),
    }


RESETS = 5


@fault("connection-reset", relayed=True)
def connection_reset(cluster: ApacheKafkaCluster, load: Load, topic: str) -> Dict[str, Any]:
    """Five times, half a second apart: partition 0's leader's next Produce answer is dropped
    and the client's connection to it reset (RST) instead.

    ``stall_s``: the longest wait, from a reset to the first acknowledgement of a record sent
    after it to a partition of that broker; ``resets``: how many fired."""
    front = needs_front(cluster, "connection-reset")
    victim = cluster.leader_of(topic, 0)
    led = [p for p, m in partitions_of(cluster, topic).items() if m.leader_id == victim]
    time.sleep(1.0)
    before = len(front.resets)
    stalls: List[float] = []
    for _ in range(RESETS):
        done = len(front.resets)
        front.reset_on_produce_answer(victim)
        wait_until("a Produce answer dropped", lambda: front.armed(victim) == 0, cluster)
        at = next(t for t, n in front.resets[done:] if n == victim)
        stall = load.result.wait_ack_after(at, WAIT_S, partitions=led)
        assert stall is not None, f"no record of {led} acknowledged after a reset"
        stalls.append(stall)
        time.sleep(0.5)
    wait_whole(cluster, topic)
    return {
        "victim": victim,
        "stall_s": max(stalls),
        "resets": len(front.resets) - before,
        "stalls_s": stalls,
    }


def _minus(t: Optional[float], since: float) -> Optional[float]:
    return None if t is None else t - since
