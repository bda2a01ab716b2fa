"""Outages (``tests/tools/cluster_faults.py`` runs them): fewer replicas left than
``min.insync.replicas`` asks for, and the whole cluster stopped and started again.

- ``replicas-lost``: two of the three brokers killed (SIGKILL) mid-stream. Once the controller
  fences them (``broker.session.timeout.ms``) the survivor leads every partition, alone in its
  in-sync replicas: with ``acks=all`` it answers NOT_ENOUGH_REPLICAS (a request it had appended
  before the ISR shrank: NOT_ENOUGH_REPLICAS_AFTER_APPEND), which the clients retry until the
  records reach ``delivery.timeout.ms`` (10 s here) and fail with a timeout. The fault waits for
  a record sent after the shrink to fail so, then starts the two brokers again: once the ISR of
  every partition holds ``min.insync.replicas`` replicas, new records go, from the same
  producer.
- ``cluster-restart``: every broker stopped (controlled shutdowns, the leader of partition 0
  last: it leads every partition when the brokers come back) while the controller keeps
  running; that broker gets a new port; the cluster stays down for ``max.block.ms`` (3 s here)
  and 3 s more, then the brokers start again. No broker a client knows answers: with Java's
  ``metadata.recovery.strategy=rebootstrap`` (KIP-899) the client goes back to
  ``bootstrap.servers`` and, as a rebootstrap forgets the topics' partitions, a ``send()`` waits
  for the topic's metadata, up to ``max.block.ms``, and then fails (Java's callback, cproducer's
  raise: "not present in metadata after 3000 ms"). Records accepted before that wait in the
  accumulator and go when the cluster is back (``delivery.timeout.ms`` is Java's 120 s); the
  moved broker is found at its new port through the brokers that kept theirs.

Each fault puts the cluster back whole (every broker running, every partition of every topic with
its full ISR) before it returns. What they measure, beside ``stall_s`` (the fault to the first
acknowledgement of a record sent after it): see each function's docstring; ``times`` holds the
moments (``time.monotonic()``) the tests check the records against.
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from tests.tools.apache_kafka import ApacheKafkaCluster
from tests.tools.cluster_faults import fault
from tests.tools.seq_load import Load, LoadResult

# replicas-lost: the records' delivery.timeout.ms, and request.timeout.ms (+ linger.ms) within
# it as Java requires
DELIVERY_TIMEOUT_MS = 10000
REQUEST_TIMEOUT_MS = 5000
# cluster-restart: how long a send() may wait for metadata; the cluster stays down that long and
# HOLD_MORE_S more (a rebootstrap comes within about a reconnect backoff and a metadata backoff
# of the last broker's going, each at most 1 s by Java's defaults)
MAX_BLOCK_MS = 3000
HOLD_MORE_S = 3.0
# every wait: long enough for a loaded 2-core machine (three clusters at once), short of the
# load's flush timeout
WAIT_S = 120.0

# how a record's failure reads, by kind
DELIVERY_TIMEOUT = re.compile(r"Expiring \d+ record\(s\)|Message timed out|_MSG_TIMED_OUT")
METADATA_TIMEOUT = re.compile(r"not present in metadata after (\d+) ms", re.IGNORECASE)
# the answers of a partition short of in-sync replicas, retried until the delivery timeout: one
# that comes back after it is the record's error (Java's Sender.canRetry)
NOT_ENOUGH_REPLICAS = re.compile(
    r"NotEnoughReplicas|NOT_ENOUGH_REPLICAS|OutOfOrderSequence|OUT_OF_ORDER_SEQUENCE"
)


def wait_until(
    what: str, check: Callable[[], bool], cluster: ApacheKafkaCluster, timeout: float = WAIT_S
) -> float:
    """Polls ``check`` until it holds; when it did (monotonic s)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return time.monotonic()
        except OSError:
            pass  # a broker going or coming
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout} s\n{cluster.log_tail()}")
        time.sleep(0.1)


def first_failure_after(result: LoadResult, t: float) -> Optional[float]:
    """When the first record sent after ``t`` failed (None: none yet)."""
    with result.lock:
        times = [
            a[0].at
            for s, a in result.acks.items()
            if a[0].error is not None and result.sent_at.get(s, -1.0) > t
        ]
    return min(times) if times else None


def min_insync(cluster: ApacheKafkaCluster) -> int:
    return int(cluster.brokers[0].properties.get("min.insync.replicas", "1"))


def session_timeout_s(cluster: ApacheKafkaCluster) -> float:
    return int(cluster.brokers[0].properties.get("broker.session.timeout.ms", "9000")) / 1000


def _rebootstraps(load: Load) -> Optional[int]:
    """cproducer's count of rebootstraps (the peers do not show theirs)."""
    producer = getattr(load, "producer", None)
    client = getattr(producer, "_client", None)
    updater = getattr(client, "metadata_updater", None)
    return None if updater is None else int(updater.rebootstraps)


@fault(
    "replicas-lost",
    config={"delivery.timeout.ms": DELIVERY_TIMEOUT_MS, "request.timeout.ms": REQUEST_TIMEOUT_MS},
    errors_allowed=True,
)
def replicas_lost(cluster: ApacheKafkaCluster, load: Load, topic: str) -> Dict[str, Any]:
    """Two of three replicas killed: NOT_ENOUGH_REPLICAS retried, then a timeout at
    delivery.timeout.ms; the brokers back, records go again.

    ``isr_shrunk_s``: the kill to every partition led by the survivor alone in its ISR;
    ``first_failure_s``: to the first record failed; ``outage_s``: to every partition's ISR at
    ``min.insync.replicas`` again (the brokers started once a record sent after the shrink had
    failed); ``stall_s``: to the first acknowledgement of a record sent after the kill;
    ``resume_s``: from the end of the outage to the first acknowledgement of a record sent after
    it."""
    survivor = cluster.leader_of(topic, 0)
    victims = [n.node_id for n in cluster.brokers if n.node_id != survivor]
    needed = min_insync(cluster)
    time.sleep(1.0)
    killed_at = time.monotonic()
    for v in victims:
        cluster.kill(v)
    shrunk_at = wait_until(
        f"{topic}: led by {survivor} alone",
        lambda: all(
            leader == survivor and isr == [survivor]
            for leader, _, isr in cluster.partition_states(topic).values()
        ),
        cluster,
        session_timeout_s(cluster) + WAIT_S,
    )
    # a record sent after the shrink was answered NOT_ENOUGH_REPLICAS until it expired
    failed_at = wait_until(
        f"{load.client}: a record sent after the ISR shrank failing",
        lambda: first_failure_after(load.result, shrunk_at) is not None,
        cluster,
        DELIVERY_TIMEOUT_MS / 1000 + WAIT_S,
    )
    time.sleep(1.0)
    for v in victims:
        cluster.nodes[v].start()
    cluster.wait_ready(WAIT_S)
    writable_at = wait_until(
        f"{topic}: ISR at min.insync.replicas={needed}",
        lambda: all(len(isr) >= needed for _, _, isr in cluster.partition_states(topic).values()),
        cluster,
    )
    resume = load.result.wait_ack_after(writable_at, WAIT_S)
    stall = load.result.first_ack_after(killed_at)
    first_failure = first_failure_after(load.result, float("-inf"))
    time.sleep(1.0)  # records go on while the ISR fills up
    cluster.wait_isr_full(WAIT_S)
    return {
        "victims": victims,
        "survivor": survivor,
        "isr_shrunk_s": shrunk_at - killed_at,
        "first_failure_s": (failed_at if first_failure is None else first_failure) - killed_at,
        "outage_s": writable_at - killed_at,
        "stall_s": None if stall is None else stall - killed_at,
        "resume_s": resume,
        "times": {"killed": killed_at, "shrunk": shrunk_at, "writable": writable_at},
    }


class Refusal(NamedTuple):
    seq: int
    started: Optional[float]  # when send() was called (known for Java's, not for cproducer's)
    at: float  # when the client said so
    error: str


def metadata_refusals(result: LoadResult) -> List[Refusal]:
    """The records a client did not take because the topic's metadata did not come within
    ``max.block.ms``: cproducer's ``send()`` raised (``refused``); Java's called the callback
    with the TimeoutException and returned (a failed record)."""
    refused = list(result.refused)
    out = [Refusal(s, None, at, e) for s, at, e in refused if METADATA_TIMEOUT.search(e)]
    with result.lock:
        out += [
            Refusal(s, result.sent_at.get(s), a[0].at, a[0].error)
            for s, a in result.acks.items()
            if a[0].error is not None and METADATA_TIMEOUT.search(a[0].error)
        ]
    return sorted(out, key=lambda r: r.at)


def send_gaps(result: LoadResult, since: float) -> List[Tuple[float, float]]:
    """The pauses between consecutive ``send()`` calls after ``since`` (start, length), longest
    first: a pause is a call that blocked (a refusal ends one too)."""
    # (copies first: the load's thread adds to both as it goes)
    sent, refused = list(result.sent_at.values()), list(result.refused)
    times = sorted([t for t in sent if t >= since] + [at for _, at, _ in refused if at >= since])
    gaps = [(a, b - a) for a, b in zip(times, times[1:])]
    return sorted(gaps, key=lambda g: -g[1])


@fault("cluster-restart", config={"max.block.ms": MAX_BLOCK_MS}, errors_allowed=True)
def cluster_restart(cluster: ApacheKafkaCluster, load: Load, topic: str) -> Dict[str, Any]:
    """Every broker stopped, one back on a new port: rebootstrap; send() blocks up to
    max.block.ms meanwhile, accepted records go when the cluster is back.

    ``outage_s``: the last broker's stop to every broker back; ``stall_s``: to the first
    acknowledgement of a record sent after that stop; ``resume_s``: from the brokers' return to
    the first acknowledgement of a record sent after it; ``refused``: the sends that failed on
    metadata after ``max.block.ms`` during the fault; ``blocked_s``: the longest pause between
    two ``send()`` calls; ``rebootstraps``: cproducer's count during the fault (None: a peer's,
    not shown); ``moved``: the broker on a new port, which leads every partition afterwards."""
    moved = cluster.leader_of(topic, 0)
    order = [n.node_id for n in cluster.brokers if n.node_id != moved] + [moved]
    rebootstraps = _rebootstraps(load)
    time.sleep(1.0)
    stop_at = time.monotonic()
    cluster.stop_brokers(order)
    down_at = time.monotonic()
    port = cluster.move_broker(moved)
    time.sleep(MAX_BLOCK_MS / 1000 + HOLD_MORE_S)
    start_at = time.monotonic()
    # the moved broker first: the last in every ISR, it leads every partition again, so that
    # no record goes anywhere but to its new port
    cluster.nodes[moved].start()
    cluster.wait_ready(WAIT_S)
    wait_until(
        f"{topic}: led by {moved}",
        lambda: all(s[0] == moved for s in cluster.partition_states(topic).values()),
        cluster,
    )
    cluster.start_brokers(WAIT_S)
    ready_at = time.monotonic()
    stall = load.result.wait_ack_after(down_at, WAIT_S)
    resume = load.result.wait_ack_after(ready_at, WAIT_S)
    time.sleep(1.0)  # records go on while the ISR fills up
    cluster.wait_isr_full(WAIT_S)
    leaders = {p: s[0] for p, s in cluster.partition_states(topic).items()}
    after = _rebootstraps(load)
    gaps = send_gaps(load.result, stop_at)
    return {
        "moved": moved,
        "port": port,
        "stops_s": down_at - stop_at,
        "outage_s": ready_at - down_at,
        "stall_s": stall,
        "resume_s": resume,
        "refused": sum(1 for r in metadata_refusals(load.result) if r.at >= stop_at),
        "blocked_s": gaps[0][1] if gaps else 0.0,
        "rebootstraps": None if after is None or rebootstraps is None else after - rebootstraps,
        "leaders": leaders,
        "times": {"stop": stop_at, "down": down_at, "start": start_at, "ready": ready_at},
    }
