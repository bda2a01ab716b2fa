"""One slow broker under unkeyed records: KIP-794's adaptive partitioning on a real cluster.

The leader of partition 0 is made slow for a while by short SIGSTOP/SIGCONT cycles (stopped
``stop_ms`` out of every ``period_ms``): its connections stay open, its requests wait. Produce
requests to it pile up (``max.in.flight.requests.per.connection``, then the accumulator's queues
of its partitions); the built-in partitioner of KIP-794 (Java's ``BuiltInPartitioner``, cproducer's
``built_in_partitioner.pyx``) weighs each partition by how few batches wait in its queue, so the
sticky partition it switches to is less often one of the slow broker's, and the slow broker's share
of the records falls while it is slow and comes back when it is not. With
``partitioner.adaptive.partitioning.enable=false`` the choice stays uniform.

Why ``acks=1`` (and therefore idempotence off: Java's and librdkafka's idempotence needs
``acks=all``): the cluster's topics have replication factor 3 on 3 brokers, so every partition has
the slow broker among its in-sync replicas; with ``acks=all`` a Produce request waits for every
in-sync replica, and a slow follower slows every partition alike, leaving adaptive partitioning
nothing to choose between. With ``acks=1`` a partition's Produce waits for its leader only: the
slow broker slows the partitions it leads, as in KIP-794's experiment. (A topic with one replica
per partition would show the same with ``acks=all``; the registry's runner makes every fault's
topic with the cluster's replication factor, so this fault asks for ``acks=1``.)

Why ``batch.size=512`` and stops of 500 ms out of every 600 ms: the partitioner learns only from
queues, and a queue grows by full batches only (the last batch of a queue takes records until it
is full), about two per sticky stint on a stopped broker (the stint ends after ``batch.size``
bytes once the last batch is full, else after twice that). Every queue drains within
milliseconds of the SIGCONT, so what the partitioner sees is how many stints a stop lasts. The
records of ``seq_load`` are about 30 bytes in a batch: at Java's default 16 KiB a stint is some
550 records, a quarter of a second at 2,000 records/s, and a stop of 150 ms holds less than one
batch; the shares do not move. With 512 bytes (stints of some 30 records, KIP-794's 512-byte
records at 16 KiB in miniature) and stops of half a second, each stop spans some 30 stints and
the slow partitions' queues reach several batches; the slow broker's share while slow measured
15-22 % for both producers on a busy 2-core machine (fair: 33 %), against 26-32 % with stops of
150 of every 300 ms. A smaller ``batch.size`` (256) made the requests more than the machine's
brokers and Java's producer kept up with.

``measure_shares`` returns, for the windows before / while slow / after, each broker's share of
the records acknowledged in the window; ``stall_s`` is the longest a record sent while the broker
was slow waited for its acknowledgement.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from tests.tools.apache_kafka import ApacheKafkaCluster
from tests.tools.cluster_faults import fault
from tests.tools.seq_load import Load, LoadResult

PARTITIONS = 6
RATE = 2000.0
# Java's names; translated for librdkafka by the registry's client_config
CONFIG: Dict[str, Any] = {"acks": "1", "enable.idempotence": "false", "batch.size": "512"}
WINDOWS = ("before", "slow", "after")


class Slowness:
    """A thread that stops node ``node_id`` for ``stop_ms`` out of every ``period_ms`` until
    ``stop()``; the node always runs again after it."""

    def __init__(
        self, cluster: ApacheKafkaCluster, node_id: int, stop_ms: float, period_ms: float
    ) -> None:
        self.node = cluster.nodes[node_id]
        self.stop_s, self.period_s = stop_ms / 1000, period_ms / 1000
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"slow-{node_id}", daemon=True)
        self.cycles = 0

    def start(self) -> Slowness:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._done.is_set():
            self.node.pause()
            try:
                self._done.wait(self.stop_s)
            finally:
                self.node.resume()
            self.cycles += 1
            self._done.wait(self.period_s - self.stop_s)

    def stop(self) -> None:
        self._done.set()
        self._thread.join(10)
        if self.node.process is not None:
            self.node.resume()  # in any case: never leave a node stopped


def leaders(cluster: ApacheKafkaCluster, topic: str, partitions: int) -> Dict[int, int]:
    """partition -> its leader's node id."""
    return {p: cluster.leader_of(topic, p) for p in range(partitions)}


def broker_shares(
    result: LoadResult, lead: Mapping[int, int], since: float, until: float
) -> Tuple[int, Dict[int, float]]:
    """Records acknowledged in [since, until) and each broker's share of them."""
    counts = result.shares(since, until)
    total = sum(counts.values())
    out = {b: 0.0 for b in sorted(set(lead.values()))}
    for p, n in counts.items():
        if p in lead and total:
            out[lead[p]] += n / total
    return total, out


def slowest_wait(result: LoadResult, since: float, until: float) -> Optional[float]:
    """The longest wait for an acknowledgement among the records sent in [since, until)."""
    sent = dict(result.sent_at)  # a copy: the load's thread adds to it (dict() is atomic)
    with result.lock:
        waits = [
            result.acks[s][0].at - t
            for s, t in sent.items()
            if since <= t < until and s in result.acks
        ]
    return max(waits) if waits else None


def measure_shares(
    cluster: ApacheKafkaCluster,
    load: Load,
    topic: str,
    before_s: float = 8.0,
    slow_s: float = 20.0,
    after_s: float = 10.0,
    settle_s: float = 2.0,
    stop_ms: float = 500.0,
    period_ms: float = 600.0,
) -> Dict[str, Any]:
    """Sends ``before_s`` with every broker well, ``slow_s`` with partition 0's leader slow, then
    ``after_s`` with it well again. Each window leaves out its first ``settle_s`` (the queues of
    the previous window drain, the partitioner's stats follow; Java's producer, whose pacing
    started while its JVM warmed up, catches up). ``shares``: window -> broker -> share;
    ``fair``: the share of the partitions the slow broker leads."""
    lead = leaders(cluster, topic, load.partitions or PARTITIONS)
    victim = lead[0]
    t0 = time.monotonic()
    time.sleep(before_s)
    slow_from = time.monotonic()
    slowness = Slowness(cluster, victim, stop_ms, period_ms).start()
    try:
        time.sleep(slow_s)
    finally:
        slowness.stop()
    slow_until = time.monotonic()
    time.sleep(after_s)
    end = time.monotonic()
    spans = {
        "before": (t0 + settle_s, slow_from),
        "slow": (slow_from + settle_s, slow_until),
        "after": (slow_until + settle_s, end),
    }
    shares: Dict[str, Dict[int, float]] = {}
    counts: Dict[str, int] = {}
    for name, (a, b) in spans.items():
        counts[name], shares[name] = broker_shares(load.result, lead, a, b)
    led = sum(1 for b in lead.values() if b == victim)
    # the windows' records still pending when the fault returns are counted by stop(): a record
    # sent while slow, acknowledged after slow_until, is in no window but its wait is measured
    return {
        "victim": victim,
        "leaders": lead,
        "fair": led / len(lead),
        "shares": shares,
        "counts": counts,
        "cycles": slowness.cycles,
        "stall_s": slowest_wait(load.result, slow_from, slow_until),
        "spans": spans,
    }


@fault("slow-broker", partitions=0, rate=RATE, config=CONFIG)
def slow_broker(cluster: ApacheKafkaCluster, load: Load, topic: str) -> Dict[str, Any]:
    """Partition 0's leader stopped 500 ms of every 600 ms for 20 s (SIGSTOP/SIGCONT), unkeyed
    records, acks=1, batch.size=512.

    Nothing is lost: the broker only waits. The adaptive partitioner (KIP-794) sends fewer
    records to the slow broker's partitions while it is slow; ``stall_s`` is the longest a record
    sent meanwhile waited for its acknowledgement; ``slow share`` the slow broker's share of the
    records acknowledged while it was slow, beside its fair share."""
    return measure_shares(cluster, load, topic)


def format_shares(rows: List[Tuple[str, Dict[str, Any]]]) -> str:
    """One line per (label, measured) and window: the records of the window and each broker's
    share, the slow one starred."""
    lines = [f"{'client':<34}{'window':<8}{'records':>8}  per-broker share (* slow broker)"]
    for label, m in rows:
        for w in WINDOWS:
            cells = "  ".join(
                f"{b}{'*' if b == m['victim'] else ' '} {s:6.1%}" for b, s in m["shares"][w].items()
            )
            lines.append(f"{label:<34}{w:<8}{m['counts'][w]:>8}  {cells}")
    return "\n".join(lines)
