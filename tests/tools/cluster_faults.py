"""Faults a production cluster does to a producer, each one a function over a running
``ApacheKafkaCluster`` and a running ``Load`` (``tests/tools/seq_load.py``): the tests run them
with cproducer (and with a peer where they assert the peer's behaviour too), and
``benchmarks/cluster_faults.py`` runs each with cproducer, librdkafka and Java's producer side by
side.

A fault is registered with ``@fault(name, ...)``: it breaks the cluster while the load runs, puts
it back (every node running again: the next fault starts on a whole cluster) and returns what it
measured (``stall_s``: from the fault to the first acknowledgement of a record sent after it, and
anything else worth a column). ``run_fault`` makes the topic, starts the load, runs the fault,
stops the load (every outcome in) and reads the topic back with librdkafka and with Java's
KafkaConsumer.

Fault modules: this one (a leader killed), ``faults_outage`` (replicas lost, the whole cluster
restarted), ``faults_moves`` (controlled moves, network faults), ``faults_txn`` (the transaction
coordinator killed), ``faults_slow`` (one slow broker: KIP-794). ``load_all()`` imports them.
"""

from __future__ import annotations

import importlib
import time
import uuid
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional

from tests.integration.readback import read_back, read_back_java
from tests.tools.apache_kafka import ApacheKafkaCluster
from tests.tools.seq_load import CLIENTS, IDEMPOTENT, Load, LoadResult, Verdict

FAULT_MODULES = ["faults_outage", "faults_moves", "faults_txn", "faults_slow", "faults_new_topic"]

# Java's setting name -> librdkafka's, where they differ
LIBRDKAFKA_NAMES = {
    "delivery.timeout.ms": "message.timeout.ms",
    "max.in.flight.requests.per.connection": "max.in.flight.requests.per.connection",
    "buffer.memory": "queue.buffering.max.kbytes",  # bytes -> kbytes, see client_config()
}


class Fault(NamedTuple):
    name: str
    action: Callable[[ApacheKafkaCluster, Load, str], Dict[str, Any]]  # (cluster, load, topic)
    partitions: int
    rate: float
    config: Mapping[str, Any]  # Java's names; translated for librdkafka
    errors_allowed: bool  # records may fail (the fault outlasts delivery.timeout.ms)
    description: str
    # broker settings the fault needs of its cluster (the benchmark groups faults by them)
    cluster_properties: Mapping[str, str] = {}
    # a fault with a load of its own (transactions ...): runner(cluster, client, config) does it
    # all and returns the FaultRun
    runner: Optional[Callable[..., FaultRun]] = None
    # the clients reach the brokers through relays (tests/tools/kafka_front.py: RelayedCluster)
    # that count their requests, cap Produce versions and reset connections
    relayed: bool = False


FAULTS: Dict[str, Fault] = {}


def fault(
    name: str,
    partitions: int = 6,
    rate: float = 1000.0,
    config: Optional[Mapping[str, Any]] = None,
    errors_allowed: bool = False,
    cluster_properties: Optional[Mapping[str, str]] = None,
    relayed: bool = False,
) -> Callable[[Callable[..., Dict[str, Any]]], Callable[..., Dict[str, Any]]]:
    def register(action: Callable[..., Dict[str, Any]]) -> Callable[..., Dict[str, Any]]:
        doc = " ".join((action.__doc__ or "").strip().split("\n\n")[0].split())
        FAULTS[name] = Fault(
            name, action, partitions, rate, dict(config or {}), errors_allowed, doc,
            cluster_properties=dict(cluster_properties or {}), relayed=relayed,
        )  # fmt: skip
        return action

    return register


def load_all() -> Dict[str, Fault]:
    for module in FAULT_MODULES:
        try:
            importlib.import_module(f"tests.tools.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tests.tools.{module}":
                raise
    return FAULTS


def client_config(client: str, config: Mapping[str, Any]) -> Dict[str, Any]:
    """The client's idempotent defaults plus ``config`` (Java's names) in its own names."""
    out = dict(IDEMPOTENT[client])
    for k, v in config.items():
        if client == "librdkafka":
            if k == "max.block.ms":
                continue  # librdkafka's produce() never blocks: a full queue raises BufferError
            if k == "buffer.memory":
                v = max(1, int(v) // 1024)
            if k == "request.timeout.ms" and "socket.timeout.ms" not in config:
                # librdkafka's request.timeout.ms is only the broker's wait for the replicas;
                # its own wait for an answer (Java's request.timeout.ms) is socket.timeout.ms
                out["socket.timeout.ms"] = v
            k = LIBRDKAFKA_NAMES.get(k, k)
        out[k] = v
    return out


class FaultRun(NamedTuple):
    fault: str
    client: str
    result: LoadResult
    verdict: Verdict  # read back by librdkafka
    java_verdict: Verdict  # read back by Java's KafkaConsumer
    measured: Dict[str, Any]  # what the fault returned (stall_s ...)
    seconds: float

    @property
    def stall_s(self) -> Optional[float]:
        value = self.measured.get("stall_s")
        return None if value is None else float(value)


def topic_name(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"


def run_fault(
    cluster: ApacheKafkaCluster,
    name: str,
    client: str = "cproducer",
    config: Optional[Mapping[str, Any]] = None,
    rate: Optional[float] = None,
) -> FaultRun:
    """One fault, one client: the topic, the load, the fault, both read-backs."""
    f = load_all()[name]
    if f.runner is not None:
        return f.runner(cluster, client, config)
    started = time.monotonic()
    topic = topic_name(name)
    cluster.create_topic(topic, f.partitions or 6)
    settings = client_config(client, {**f.config, **(config or {})})
    load = CLIENTS[client](
        cluster.bootstrap_servers, topic, f.partitions, f.rate if rate is None else rate, settings
    )
    load.start()
    try:
        measured = f.action(cluster, load, topic)
    finally:
        result = load.stop()
    # a record whose outcome was an error may be in the topic as well: read at least the
    # acknowledged ones, and a moment more for the rest and for duplicates
    acked = sum(1 for a in result.acks.values() if a[0].error is None)
    expected = acked if f.errors_allowed else len(result.sent_at)
    return judged(cluster, name, client, topic, f.partitions, result, measured, started, expected)


def judged(
    cluster: ApacheKafkaCluster,
    name: str,
    client: str,
    topic: str,
    partitions: int,
    result: LoadResult,
    measured: Dict[str, Any],
    started: float,
    expected: int,
) -> FaultRun:
    """The run's FaultRun: ``topic`` read back by librdkafka and by Java's KafkaConsumer (at
    least ``expected`` records, and a moment more for duplicates), each reader's verdict.
    ``partitions``: the load's (0: unkeyed, the topic's 6)."""
    parts = partitions or 6
    by_rdkafka = read_back(cluster.bootstrap_servers, topic, parts, expected, 90, settle_s=1.0)
    by_java = read_back_java(cluster.bootstrap_servers, topic, parts, expected, 90)
    return FaultRun(
        name,
        client,
        result,
        result.verdict(by_rdkafka, partitions),
        result.verdict(by_java, partitions),
        measured,
        time.monotonic() - started,
    )


def assert_clean(run: FaultRun, errors_allowed: bool = False) -> None:
    """Nothing lost, duplicated, reordered or left unfinished, for both readers; no error unless
    the fault allows them."""
    for reader, v in (("librdkafka", run.verdict), ("Java", run.java_verdict)):
        assert v.sent > 0, run
        assert v.clean, f"{run.client} under {run.fault!r}, read by {reader}: {v}"
        assert v.acked + v.failed == v.sent, f"{run.client} under {run.fault!r}: {v}"
    if not errors_allowed:
        errors = run.result.errors()
        assert not errors, f"{run.client}: {len(errors)} records failed: {errors[:5]}"
        assert not run.result.refused, f"{run.client}: send() refused {run.result.refused[:5]}"


TABLE_HEAD = (
    f"{'fault':<26}{'client':<12}{'sent':>8}{'acked':>8}{'failed':>8}{'lost':>6}{'dup':>5}"
    f"{'reord':>7}{'stall s':>9}"
)


def table_row(run: FaultRun) -> str:
    v = run.verdict
    # a reader's disagreement would show as the larger count
    j = run.java_verdict
    stall = "-" if run.stall_s is None else f"{run.stall_s:.2f}"
    return (
        f"{run.fault:<26}{run.client:<12}{v.sent:>8}{v.acked:>8}{v.failed:>8}"
        f"{max(v.lost, j.lost) + v.unfinished:>6}{max(v.duplicated, j.duplicated):>5}"
        f"{max(v.reordered, j.reordered):>7}{stall:>9}"
    )


# -- the faults of this module -----------------------------------------------------------------


@fault("leader-killed")
def leader_killed(cluster: ApacheKafkaCluster, load: Load, topic: str) -> Dict[str, Any]:
    """kill -9 of partition 0's leader mid-stream, then started again.

    The records of its partitions wait (the connection is gone, and Metadata names the dead
    broker until the controller fences it at broker.session.timeout.ms, 9 s), then go to the new
    leader; with acks=all the other partitions wait too, as the dead broker stays in their ISR
    until it is fenced. ``stall_s``: the kill to the first acknowledgement of a record of
    partition 0 sent after it; ``stall_any_s``: of any partition."""
    victim = cluster.leader_of(topic, 0)
    time.sleep(1.0)
    killed_at = time.monotonic()
    cluster.kill(victim)
    stall = load.result.wait_ack_after(killed_at, 60, partitions=[0])
    any_stall = load.result.first_ack_after(killed_at)
    time.sleep(1.0)
    cluster.start_node(victim)
    time.sleep(1.0)  # records go on while the restarted broker catches up as a follower
    return {
        "victim": victim,
        "stall_s": stall,
        "stall_any_s": None if any_stall is None else any_stall - killed_at,
    }


def format_table(runs: List[FaultRun]) -> str:
    return "\n".join([TABLE_HEAD, *(table_row(r) for r in runs)])
