"""Records sent the moment a topic is created, on the 3-broker cluster (replication factor 3,
``min.insync.replicas=2``), with a fault in the first second (``tests/tools/cluster_faults.py``
runs them; ``tests/tools/new_topic_order.py`` is the single-broker scenario).

Apache Kafka's Metadata names a new partition's leader a moment before the leader takes writes
(KAFKA-15591): meanwhile Produce is answered NOT_LEADER_OR_FOLLOWER, and a leader with no state for
a producer id writes whatever sequence reaches it first, so a producer with several batches of a
partition in flight may see a later one written before the first. To meet that moment the
producer must be connected, with its producer id, before the topic exists: the load has a record
acknowledged on a warm-up topic (``ready``), the topic is created with ``writable=False`` (the
leaders named, not yet taking writes) and the load sends at once (``go``). The cluster creates
topics on a Metadata request for an unknown one, so the load may not name the topic before then.

- ``new-topic``: 6 partitions at 2,000 records/s for 4 s from the topic's creation;
- ``new-topic-leader-moved``: the same, and half a second in, partition 0's replica list rotated
  (a reassignment, the leader last) and a preferred-leader election for it: its first replica
  leads, the old leader follows;
- ``new-topic-broker-killed``: the same, and half a second in, partition 0's leader killed
  (SIGKILL); the load goes on until a record of partition 0 sent after the kill is acknowledged
  (the dead broker stays in every ISR until the controller fences it at
  ``broker.session.timeout.ms``: with ``acks=all`` every partition waits), then the load stops
  sending and the broker is started again.

Each runs as a ``Fault`` with a runner (``run_fault`` calls it) for cproducer and librdkafka.
Java's load (``tests/java/SeqProducer.java``) names its topic with its first send, before it could
say it is connected: not a client of these faults (``NewTopicRunner.clients``).

``measured``: ``first_ack_s`` (the creation to the first acknowledgement), ``every_partition_s``
(... until every partition had one), ``led_s`` (the creation until every leader answered for its
partitions: when the moment ended, from the cluster's side), and per fault ``stall_s`` (the move
or kill to the first acknowledgement of a partition-0 record sent after it).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, Iterable, Mapping, Optional

from tests.tools.apache_kafka import ApacheKafkaCluster
from tests.tools.cluster_faults import (
    FAULTS,
    Fault,
    FaultRun,
    client_config,
    judged,
    topic_name,
)
from tests.tools.faults_moves import (
    PREFERRED,
    WAIT_S,
    _admin,
    _reassign,
    partitions_of,
    recovery,
    wait_until,
    wait_whole,
)
from tests.tools.seq_load import CproducerLoad, LibrdkafkaLoad, Load

PARTITIONS = 6
RATE = 2000.0
SENDING_S = 4.0  # new-topic: how long the load sends from the topic's creation
STRIKE_S = 0.5  # the move or the kill, this long after the topic's creation
WARM_UP_S = 60.0


class ConnectedFirst(Load):
    """A load whose producer connects (a record acknowledged on ``warm``) before it sends to
    its topic; ``begin()`` starts it and returns when it is connected, ``send_now()`` lets it
    send."""

    def __init__(self, *args: Any, warm: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.warm = warm
        self.ready = threading.Event()
        self.go = threading.Event()
        self.created_at = 0.0  # when the topic's CreateTopics returned (monotonic)

    def _warm_up(self) -> None:
        raise NotImplementedError

    def _paced(self) -> Iterable[int]:
        self._warm_up()
        self.ready.set()
        while not self.go.wait(0.05):
            if self._stop.is_set():
                return iter(())
        return super()._paced()

    def begin(self, timeout: float = WARM_UP_S) -> None:
        """Load.start() would wait for an acknowledgement on the topic, not created yet."""
        self._thread = thread = threading.Thread(target=self._guarded, name=f"{self.client}-load")
        thread.start()
        deadline = time.monotonic() + timeout
        while not self.ready.wait(0.02):
            if self.failure is not None or not thread.is_alive():
                self.stop()  # raises the load's failure, if any
                raise RuntimeError(f"{self.client}: the load ended before its warm-up")
            if time.monotonic() > deadline:
                self.stop(30)
                raise TimeoutError(f"{self.client}: warm-up record not acknowledged in {timeout} s")

    def send_now(self, created_at: float) -> None:
        self.created_at = created_at
        self.go.set()


class NewTopicCproducerLoad(ConnectedFirst, CproducerLoad):
    def _warm_up(self) -> None:
        # CproducerLoad._run has made self.producer before it asks for the sequence numbers
        self.producer.send(self.warm, b"warm-up").get(30)


class NewTopicLibrdkafkaLoad(ConnectedFirst, LibrdkafkaLoad):
    def _warm_up(self) -> None:
        # LibrdkafkaLoad._run has made self.producer (its poll thread running) before it asks
        # for the sequence numbers
        producer = self.producer
        producer.produce(self.warm, b"warm-up")
        if producer.flush(30):
            raise TimeoutError("librdkafka: the warm-up record was not delivered in 30 s")


LOADS: Dict[str, Callable[..., ConnectedFirst]] = {
    "cproducer": NewTopicCproducerLoad,
    "librdkafka": NewTopicLibrdkafkaLoad,
}


def _sleep_until(t: float) -> None:
    wait = t - time.monotonic()
    if wait > 0:
        time.sleep(wait)


class _Led(threading.Thread):
    """Polls until every leader of ``topic`` answers for its partitions (ListOffsets, the
    question only a leader answers): ``at`` is then when, else None."""

    def __init__(self, cluster: ApacheKafkaCluster, topic: str, timeout: float = 20.0) -> None:
        super().__init__(name="new-topic-led", daemon=True)
        self.cluster, self.topic, self.timeout = cluster, topic, timeout
        self.at: Optional[float] = None

    def run(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            try:
                if self.cluster._led(self.topic, PARTITIONS):
                    self.at = time.monotonic()
                    return
            except Exception:  # noqa: BLE001 - a broker killed or between states: ask again
                pass
            time.sleep(0.02)


def _first_acks(load: ConnectedFirst) -> Dict[str, Any]:
    first = load.result.wait_ack_after(load.created_at, WAIT_S)
    return {
        "first_ack_s": first,
        "every_partition_s": recovery(load, load.created_at, range(PARTITIONS)),
    }


def new_topic(
    cluster: ApacheKafkaCluster, load: ConnectedFirst, topic: str, admin: Any
) -> Dict[str, Any]:
    """Records sent the moment a 6-partition topic is created, by a producer connected before
    it existed, for 4 s."""
    _sleep_until(load.created_at + SENDING_S)
    return _first_acks(load)


def new_topic_leader_moved(
    cluster: ApacheKafkaCluster, load: ConnectedFirst, topic: str, admin: Any
) -> Dict[str, Any]:
    """``new-topic``, and half a second in, partition 0's leader moved: its replica list rotated
    (a reassignment, the leader last) and a preferred-leader election for it.

    A reassignment that keeps a leader among the replicas leaves it leading: the election hands
    partition 0 to the rotated list's first replica. ``stall_s``: from the election's answer to
    the first acknowledgement of a partition-0 record sent after it."""
    p0 = partitions_of(cluster, topic)[0]
    old = p0.leader_id
    replicas = list(p0.replica_ids)
    i = replicas.index(old)
    rotated = replicas[i + 1 :] + replicas[: i + 1]
    _sleep_until(load.created_at + STRIKE_S)
    struck_at = time.monotonic()
    _reassign(admin, topic, {0: rotated})
    admin.elect_leaders(PREFERRED, {topic: [0]}, timeout_ms=30000)
    moved_at = time.monotonic()
    wait_until(
        "partition 0 led by its new first replica",
        lambda: partitions_of(cluster, topic)[0].leader_id == rotated[0],
        cluster,
    )
    stall = load.result.wait_ack_after(moved_at, WAIT_S, partitions=[0])
    _sleep_until(load.created_at + SENDING_S)
    wait_whole(cluster, topic)
    return {
        **_first_acks(load),
        "old_leader": old,
        "new_leader": rotated[0],
        "struck_s": struck_at - load.created_at,
        "move_call_s": moved_at - struck_at,
        "stall_s": stall,
    }


def new_topic_broker_killed(
    cluster: ApacheKafkaCluster, load: ConnectedFirst, topic: str, admin: Any
) -> Dict[str, Any]:
    """``new-topic``, and half a second in, partition 0's leader killed (SIGKILL), started again
    once a record of partition 0 sent after the kill is acknowledged.

    ``stall_s``: the kill to that acknowledgement (the controller fences the dead broker at
    broker.session.timeout.ms, 9 s; with acks=all every partition waits until then);
    ``stall_any_s``: the kill to the first acknowledgement of any record sent after it."""
    victim = cluster.leader_of(topic, 0)
    _sleep_until(load.created_at + STRIKE_S)
    killed_at = time.monotonic()
    cluster.kill(victim)
    stall = load.result.wait_ack_after(killed_at, WAIT_S, partitions=[0])
    any_ack = load.result.first_ack_after(killed_at)
    # the records so far are the test; sending on through the restart (tens of seconds) would
    # only lengthen the read-back
    load.end_sending()
    restarting = time.monotonic()
    cluster.start_node(victim)
    restarted = time.monotonic()
    return {
        **_first_acks(load),
        "victim": victim,
        "struck_s": killed_at - load.created_at,
        "stall_s": stall,
        "stall_any_s": None if any_ack is None else any_ack - killed_at,
        "restart_s": restarted - restarting,
    }


ACTIONS: Dict[str, Callable[..., Dict[str, Any]]] = {
    "new-topic": new_topic,
    "new-topic-leader-moved": new_topic_leader_moved,
    "new-topic-broker-killed": new_topic_broker_killed,
}


def run_new_topic_fault(
    cluster: ApacheKafkaCluster,
    client: str = "cproducer",
    config: Optional[Mapping[str, Any]] = None,
    name: str = "new-topic",
) -> FaultRun:
    """One fault, one client: the warm-up topic, the load connected, the topic created and sent
    to at once, the fault, both read-backs. ``config``: producer settings, Java's names.
    ``ACTIONS[name](cluster, load, topic, admin)`` is the fault (``admin``: a kafka-python
    ``KafkaAdminClient`` connected before the topic's creation)."""
    if client not in LOADS:
        raise ValueError(f"{name}: no load for {client!r} that connects first (of {list(LOADS)})")
    started = time.monotonic()
    warm = topic_name("new-topic-warm")
    cluster.create_topic(warm, 1)
    topic = topic_name(name)
    settings = client_config(client, config or {})
    load = LOADS[client](cluster.bootstrap_servers, topic, PARTITIONS, RATE, settings, warm=warm)
    load.begin()
    led = _Led(cluster, topic)
    # connected before the topic's creation: a move in the first second cannot wait for the
    # admin client's bootstrap (seconds on a loaded machine)
    admin = _admin(cluster)
    try:
        try:
            cluster.create_topic(topic, PARTITIONS, writable=False)
            led.start()
            load.send_now(time.monotonic())
            measured = ACTIONS[name](cluster, load, topic, admin)
        finally:
            result = load.stop()
    finally:
        admin.close()
    led.join(30)
    # every replica back in sync (a killed broker catching up): the next fault starts on a
    # whole cluster
    cluster.wait_isr_full(WAIT_S)
    measured["led_s"] = None if led.at is None else led.at - load.created_at
    # no record may fail: read every one sent
    return judged(
        cluster, name, client, topic, PARTITIONS, result, measured, started, len(result.sent_at)
    )


class NewTopicRunner:
    """A ``Fault.runner``; ``clients``: those it runs (the benchmark runs no other)."""

    clients = tuple(LOADS)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(
        self,
        cluster: ApacheKafkaCluster,
        client: str = "cproducer",
        config: Optional[Mapping[str, Any]] = None,
    ) -> FaultRun:
        return run_new_topic_fault(cluster, client, config, self.name)


def _register() -> None:
    """The three faults in ``cluster_faults.FAULTS``, with their runner."""
    for name, action in ACTIONS.items():
        doc = (action.__doc__ or "").strip().split("\n\n")[0]
        FAULTS[name] = Fault(
            name,
            action,
            PARTITIONS,
            RATE,
            {},
            False,
            " ".join(doc.split()),
            runner=NewTopicRunner(name),
        )


_register()
