"""Custom partitioners: the protocol, and the legacy ones (Java's) for comparison.

With no partitioner configured the producer uses the built-in KIP-794 logic
(``producer.internals.built_in_partitioner.BuiltInPartitioner``, called from the accumulator):
keyed records by murmur2, unkeyed ones sticky with uniform or adaptive switching.

A custom partitioner is an object with
``partition(topic, key, key_bytes, value, value_bytes, cluster) -> int`` and, optionally,
``configure(configs)``, ``close()`` and ``on_new_batch(topic, cluster, prev_partition)`` (subclass
``Partitioner`` to get no-op defaults). Returning ``-1`` hands the choice to the built-in logic, as
KIP-794 allows. A plain callable ``f(key_bytes, all_partitions, available_partitions)`` (lists of
partition ids, as kafka-python 2 passes them) is accepted too.

Which ``cluster`` it gets depends on how it was configured, as the settings' spellings do:

- ``partitioner.class`` (Java's name), or a subclass of this module's ``Partitioner``: the
  producer's :class:`~cproducer.cluster.Cluster` (``partitions_for_topic`` gives
  ``PartitionInfo``s, as Java's ``Cluster.partitionsForTopic``);
- ``partitioner=`` (kafka-python's name), and any ``kafka.partitioner.Partitioner``: kafka-python
  3's protocol (``KafkaPythonPartitioner``). The cluster is a :class:`ClusterMetadataView`:
  ``topics()``, ``partitions_for_topic(topic)`` and ``available_partitions_for_topic(topic)`` give
  sets of partition ids, as kafka-python's ``ClusterMetadata`` does. An object that is no
  ``kafka.partitioner.Partitioner`` and whose ``partition`` takes three arguments is called as
  kafka-python calls those: ``partition(topic, key_bytes, cluster)``.

A partitioner is called once per record. Only one that implements ``on_new_batch`` (a sticky
one: the legacy ones below, kafka-python's ``StickyPartitioner``) takes part in Java's and
kafka-python's abort-for-new-batch protocol: when its choice would start a new batch for an
unkeyed record, the producer calls ``on_new_batch(topic, cluster, prev_partition)`` and then
``partition`` again for that record.

The legacy partitioners, selectable by name (``resolve_partitioner``):

- ``DefaultPartitioner`` (Java's ``org.apache.kafka.clients.producer.internals.DefaultPartitioner``
  of Kafka 2.4 to 3.x, removed in 4.0): keyed records by murmur2 over all partitions; unkeyed ones
  sticky (KIP-480, Java's ``StickyPartitionCache``): one partition until ``on_new_batch`` reports
  a new batch on it, then another available partition picked at random. A slow broker's batches
  wait, so they fill up before the partition moves on while a fast one's leave with a few records:
  the slow broker gets more of the records (the skew KIP-794 measured and replaced).
- ``UniformStickyPartitioner`` (KIP-480, Java 2.4 to 3.x): the same sticky choice for every
  record, whatever its key.
- ``RoundRobinPartitioner``: ignores keys; a per-topic counter from 0 over the available
  partitions. The ``on_new_batch`` quirk: the producer calls ``partition`` a second time for a
  record whose append was aborted for a new batch, which alone would make the counter skip a
  partition at every new batch (KAFKA-9965: uneven, even half-empty, partitions). Java 3.x's fix
  is kept: ``on_new_batch`` queues the partition the record had been given and the next
  ``partition`` call for the topic takes it back. (Java 4 removed ``onNewBatch``, and the queue
  with it; our producer still calls ``on_new_batch`` as Java 3.x did.)
"""

from __future__ import annotations

import inspect
import numbers
import random as _random
import threading
import time
from collections import deque
from typing import (
    Any,
    Callable,
    Deque,
    Dict,
    FrozenSet,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Set,
    Tuple,
    Union,
)

from cproducer.errors import ConfigError
from cproducer.utils.murmur2 import partition_for_key

__all__ = [
    "BrokerMetadata",
    "CallablePartitioner",
    "ClusterMetadataView",
    "DefaultPartitioner",
    "KafkaPythonPartitioner",
    "Partitioner",
    "RoundRobinPartitioner",
    "StickyPartitionCache",
    "UniformStickyPartitioner",
    "resolve_partitioner",
]


class Partitioner:
    """Base class for custom partitioners (subclassing is optional: any object with a
    ``partition`` method will do). ``configure``, ``close`` and ``on_new_batch`` do nothing by
    default."""

    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int:
        """The partition for the record, or -1 to let the built-in logic choose."""
        raise NotImplementedError

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Called once with the producer's configuration."""

    def close(self) -> None:
        """Called when the producer closes."""

    def on_new_batch(self, topic: str, cluster: Any, prev_partition: int) -> None:
        """A record given ``prev_partition`` was about to start a new batch there; ``partition``
        is called again for it right after. Called only when a subclass overrides it (this
        no-op base keeps the partitioner at one call per record)."""


def reruns_on_new_batch(partitioner: Any) -> bool:
    """Whether the producer runs the abort-for-new-batch protocol for this partitioner: only
    when it implements ``on_new_batch`` itself (not the no-op of ``Partitioner``). Any other
    partitioner is called exactly once per record."""
    if isinstance(partitioner, KafkaPythonPartitioner):
        return partitioner.has_on_new_batch
    hook = getattr(type(partitioner), "on_new_batch", None)
    return callable(hook) and hook is not Partitioner.on_new_batch


def _partitions(cluster: Any, topic: str) -> Tuple[Any, ...]:
    partitions = cluster.partitions_for_topic(topic)
    if not partitions:
        raise ValueError(f"topic {topic!r} has no partitions in the cluster view")
    return tuple(partitions)


def _to_positive(n: int) -> int:
    """Java's ``Utils.toPositive`` for a 32-bit value."""
    return n & 0x7FFFFFFF


class _Counters:
    """Per-topic 32-bit counters (Java's ``AtomicInteger`` per topic, wrapping as Java's int)."""

    def __init__(self, start: Callable[[], int]) -> None:
        self._counters: Dict[str, int] = {}
        self._lock = threading.Lock()
        self._start = start

    def next(self, topic: str) -> int:
        """The counter's value (then incremented), as a Java int's bits."""
        with self._lock:
            value = self._counters.get(topic)
            if value is None:
                value = int(self._start())
            self._counters[topic] = (value + 1) & 0xFFFFFFFF
            return value


def _round_robin(counter: int, topic: str, cluster: Any) -> int:
    # Java: toPositive(counter) % available, or % all partitions when none is available
    available = cluster.available_partitions_for_topic(topic)
    if available:
        return int(available[_to_positive(counter) % len(available)].partition)
    return _to_positive(counter) % len(_partitions(cluster, topic))


class StickyPartitionCache:
    """Java's StickyPartitionCache (KIP-480): the sticky partition of each topic, kept until
    ``next_partition`` is told of a new batch on it. ``rng`` (a ``random.Random``) is for
    tests."""

    def __init__(self, rng: Optional[_random.Random] = None) -> None:
        self._sticky: Dict[str, int] = {}
        self._lock = threading.Lock()
        self._rng = rng or _random.Random()

    def partition(self, topic: str, cluster: Any) -> int:
        """The topic's sticky partition, chosen now if it has none yet."""
        part = self._sticky.get(topic)
        if part is None:
            return self.next_partition(topic, cluster, -1)
        return part

    def next_partition(self, topic: str, cluster: Any, prev_partition: int) -> int:
        """Moves the topic on from ``prev_partition`` (when it is still the sticky one) to another
        available partition picked at random; the sticky partition afterwards."""
        with self._lock:
            old = self._sticky.get(topic)
            if old is not None and old != prev_partition:
                return old  # a stale notification, or another thread already moved on
            available = cluster.available_partitions_for_topic(topic)
            if len(available) == 1:
                new = int(available[0].partition)
            elif available:
                # any available partition but the old one, uniformly (Java draws until it differs)
                choices = [p.partition for p in available if p.partition != old]
                new = int(self._rng.choice(choices))
            else:
                new = self._rng.randrange(len(_partitions(cluster, topic)))
            self._sticky[topic] = new
            return new


class DefaultPartitioner(Partitioner):
    """Java's DefaultPartitioner of Kafka 2.4 to 3.x: murmur2 over all partitions for keyed
    records; the sticky partition (KIP-480) for the others, moved on by ``on_new_batch``. ``rng``
    (a ``random.Random``) is for tests."""

    def __init__(self, rng: Optional[_random.Random] = None) -> None:
        self._cache = StickyPartitionCache(rng)

    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int:
        if key_bytes is not None:
            return int(partition_for_key(key_bytes, len(_partitions(cluster, topic))))
        return self._cache.partition(topic, cluster)

    def on_new_batch(self, topic: str, cluster: Any, prev_partition: int) -> None:
        self._cache.next_partition(topic, cluster, prev_partition)


class UniformStickyPartitioner(Partitioner):
    """KIP-480: every record of a topic goes to its sticky partition, whatever its key, until
    ``on_new_batch`` reports a new batch on that partition (Java's StickyPartitionCache). ``rng``
    (a ``random.Random``) is for tests."""

    def __init__(self, rng: Optional[_random.Random] = None) -> None:
        self._cache = StickyPartitionCache(rng)

    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int:
        return self._cache.partition(topic, cluster)

    def on_new_batch(self, topic: str, cluster: Any, prev_partition: int) -> None:
        self._cache.next_partition(topic, cluster, prev_partition)


class RoundRobinPartitioner(Partitioner):
    """Java's RoundRobinPartitioner, with Java 3.x's ``on_new_batch`` queue (see the module
    docstring): keys are ignored; a per-topic counter from 0 (or ``random_start()``) walks the
    available partitions."""

    def __init__(self, random_start: Optional[Callable[[], int]] = None) -> None:
        self._counters = _Counters(random_start or (lambda: 0))
        self._queues: Dict[str, Deque[int]] = {}

    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int:
        queue = self._queues.get(topic)
        if queue:
            try:
                return queue.popleft()  # the partition of a record that started a new batch
            except IndexError:  # another thread took it
                pass
        return _round_robin(self._counters.next(topic), topic, cluster)

    def on_new_batch(self, topic: str, cluster: Any, prev_partition: int) -> None:
        queue = self._queues.get(topic)
        if queue is None:
            queue = self._queues.setdefault(topic, deque())
        queue.append(prev_partition)


class CallablePartitioner(Partitioner):
    """Adapts a kafka-python style ``fn(key_bytes, all_partitions, available_partitions) -> int``
    (lists of partition ids, sorted) to the partitioner protocol."""

    def __init__(self, fn: Callable[[Any, List[int], List[int]], Any]) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        # the ids of the last (cluster, topic): a Cluster never changes
        self._cache: Optional[Tuple[Any, str, Tuple[int, ...], Tuple[int, ...]]] = None

    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int:
        cache = self._cache
        if cache is None or cache[0] is not cluster or cache[1] != topic:
            all_ids = tuple(p.partition for p in cluster.partitions_for_topic(topic))
            available = tuple(p.partition for p in cluster.available_partitions_for_topic(topic))
            cache = self._cache = (cluster, topic, all_ids, available)
        result = self.fn(key_bytes, list(cache[2]), list(cache[3]))  # copies: fn may keep them
        if isinstance(result, bool) or not isinstance(result, numbers.Integral):
            raise TypeError(
                f"the partitioner callable {getattr(self.fn, '__name__', self.fn)!r} returned "
                f"{result!r}; expected a partition id (int)"
            )
        return int(result)

    def __repr__(self) -> str:
        return f"CallablePartitioner({self.fn!r})"


class BrokerMetadata(NamedTuple):
    """A broker as kafka-python's ``ClusterMetadata`` gives it (the fields of its
    ``MetadataResponseBroker``): ``node_id`` is ``'bootstrap-0'``... for a bootstrap address."""

    node_id: Union[int, str]
    host: str
    port: int
    rack: Optional[str] = None


#: ClusterMetadata's methods that change the metadata or its refresh: the view is a snapshot
_MUTATORS = frozenset(
    (
        "add_coordinator",
        "add_listener",
        "add_topic",
        "attach",
        "close",
        "failed_update",
        "metadata_request",
        "remove_listener",
        "request_update",
        "set_topics",
        "start_refresh_loop",
        "update_metadata",
        "update_partition_leader",
    )
)


#: the producer settings a ClusterMetadataView reads
_VIEW_SETTINGS = (
    "bootstrap.servers",
    "retry.backoff.ms",
    "metadata.max.age.ms",
    "allow.auto.create.topics",
    "client.dns.lookup",
)


class ClusterMetadataView:
    """kafka-python's ``ClusterMetadata`` as its partitioners read it, over one
    :class:`~cproducer.cluster.Cluster` (an immutable snapshot), with kafka-python's return types:
    partition ids as sets of ints, ``None`` for a topic the metadata does not know, brokers as
    :class:`BrokerMetadata`. ``settings``: the producer's configuration (Java's names), for
    ``bootstrap_brokers()``, ``config``, ``ttl()`` and ``refresh_backoff()``.

    Not kept by cproducer's metadata, so answered as kafka-python answers for what it does not
    know: ``topic_id`` / ``topic_name_for_id`` (None) and ``get_coordinator`` (None: the
    transaction coordinator is the TransactionManager's, not the metadata's). The methods that
    change the metadata (``request_update``, ``add_topic``, ...) raise AttributeError: the
    producer refreshes its metadata itself."""

    __slots__ = ("_cluster", "_ids", "_available", "_settings", "_made_at")

    #: kafka-python's attributes of a ClusterMetadata that is running
    closed = False
    need_all_topic_metadata = False

    def __init__(self, cluster: Any, settings: Optional[Mapping[str, Any]] = None) -> None:
        self._cluster = cluster
        self._ids: Dict[str, FrozenSet[int]] = {}
        self._available: Dict[str, FrozenSet[int]] = {}
        self._settings: Mapping[str, Any] = settings or {}
        # a view is made when a new Cluster arrives: its age is the metadata's, for ttl()
        self._made_at = time.monotonic()

    @property
    def cluster(self) -> Any:
        """The producer's Cluster this view reads."""
        return self._cluster

    # -- topics and partitions ------------------------------------------------------------

    def topics(self, exclude_internal_topics: bool = True) -> Set[str]:
        topics = set(self._cluster.topics)
        if exclude_internal_topics:
            topics -= set(self._cluster.internal_topics)
        return topics

    def partitions_for_topic(self, topic: str) -> Optional[Set[int]]:
        """Every partition id of ``topic`` (None: the topic is not in the metadata)."""
        ids = self._ids.get(topic)
        if ids is None:
            infos = self._cluster.partitions_for_topic(topic)
            if not infos:
                return None
            ids = self._ids[topic] = frozenset(p.partition for p in infos)
        return set(ids)

    def available_partitions_for_topic(self, topic: str) -> Optional[Set[int]]:
        """The ids of ``topic``'s partitions that have a leader (None: unknown topic)."""
        ids = self._available.get(topic)
        if ids is None:
            if not self._cluster.partitions_for_topic(topic):
                return None
            infos = self._cluster.available_partitions_for_topic(topic)
            ids = self._available[topic] = frozenset(p.partition for p in infos)
        return set(ids)

    def leader_for_partition(self, partition: Any) -> Optional[int]:
        """The leader's node id of a ``(topic, partition)``; -1 without a leader, None for an
        unknown partition."""
        info = self._cluster.partition((partition[0], partition[1]))
        if info is None:
            return None
        return -1 if info.leader is None else int(info.leader.id)

    def leader_epoch_for_partition(self, partition: Any) -> Optional[int]:
        """The leader epoch of a ``(topic, partition)`` (-1 when the broker gave none), None for an
        unknown partition."""
        tp = (partition[0], partition[1])
        if self._cluster.partition(tp) is None:
            return None
        return int(self._cluster.leader_epoch_for(tp))

    def is_replica_node(self, partition: Any, node_id: Any) -> Optional[BrokerMetadata]:
        """The broker ``node_id`` when it is known and a replica of the partition, else None."""
        broker = self.broker_metadata(node_id)
        info = self._cluster.partition((partition[0], partition[1]))
        if broker is None or info is None:
            return None
        return broker if any(n.id == node_id for n in info.replicas) else None

    def partitions_for_broker(self, broker_id: Any) -> Optional[Set[Any]]:
        """The ``(topic, partition)``s led by ``broker_id`` (None when it leads none)."""
        from cproducer.cluster import TopicPartition

        if not isinstance(broker_id, int):
            return None  # a bootstrap node's 'bootstrap-0' leads nothing
        led = {
            TopicPartition(p.topic, p.partition)
            for p in self._cluster.partitions_for_node(broker_id)
        }
        return led or None

    def topic_id(self, topic_name: str) -> None:
        """None: cproducer's metadata keeps no topic ids (kafka-python's answer for unknown)."""
        return None

    def topic_name_for_id(self, topic_id: Any) -> None:
        """None: cproducer's metadata keeps no topic ids (kafka-python's answer for unknown)."""
        return None

    def get_coordinator(self, key: Any, key_type: Any = None) -> None:
        """None (kafka-python's "unknown group"): coordinators are not in the metadata here."""
        return None

    # -- brokers ------------------------------------------------------------------------------

    def brokers(self) -> List[BrokerMetadata]:
        """The brokers of the metadata (none before the first answer, as in kafka-python)."""
        if self._cluster.is_bootstrap_configured:
            return []
        return [BrokerMetadata(n.id, n.host, n.port, n.rack) for n in self._cluster.nodes]

    def bootstrap_brokers(self) -> List[BrokerMetadata]:
        """The ``bootstrap_servers`` addresses, with kafka-python's ids ``'bootstrap-0'``..."""
        servers = self._settings.get("bootstrap.servers") or ()
        return [
            BrokerMetadata(f"bootstrap-{i}", host, port, None)
            for i, (host, port) in enumerate(servers)
        ]

    def is_bootstrap(self, node_id: Any) -> bool:
        return any(b.node_id == node_id for b in self.bootstrap_brokers())

    def broker_metadata(self, broker_id: Any) -> Optional[BrokerMetadata]:
        """A broker of the metadata, or a bootstrap address by its ``'bootstrap-N'`` id."""
        if isinstance(broker_id, int) and not self._cluster.is_bootstrap_configured:
            node = self._cluster.node_by_id(broker_id)
            if node is not None:
                return BrokerMetadata(node.id, node.host, node.port, node.rack)
        for broker in self.bootstrap_brokers():
            if broker.node_id == broker_id:
                return broker
        return None

    @property
    def controller(self) -> Optional[BrokerMetadata]:
        node = self._cluster.controller
        return None if node is None else BrokerMetadata(node.id, node.host, node.port, node.rack)

    @property
    def cluster_id(self) -> Optional[str]:
        return self._cluster.cluster_id  # type: ignore[no-any-return]

    @property
    def internal_topics(self) -> Set[str]:
        return set(self._cluster.internal_topics)

    @property
    def unauthorized_topics(self) -> Set[str]:
        return set(self._cluster.unauthorized_topics)

    # -- refresh --------------------------------------------------------------------------------

    @property
    def config(self) -> Dict[str, Any]:
        """kafka-python's ``ClusterMetadata.config``, from the producer's settings."""
        s = self._settings
        return {
            "retry_backoff_ms": s.get("retry.backoff.ms", 100),
            "metadata_max_age_ms": s.get("metadata.max.age.ms", 300000),
            "bootstrap_servers": [f"{h}:{p}" for h, p in s.get("bootstrap.servers") or ()],
            "allow_auto_create_topics": s.get("allow.auto.create.topics", True),
            "client_dns_lookup": s.get("client.dns.lookup", "use_all_dns_ips"),
        }

    def ttl(self) -> float:
        """Milliseconds until this metadata is ``metadata_max_age_ms`` old (0 once it is)."""
        age_ms = (time.monotonic() - self._made_at) * 1000.0
        return max(float(self._settings.get("metadata.max.age.ms", 300000)) - age_ms, 0.0)

    def refresh_backoff(self) -> int:
        """``retry_backoff_ms``."""
        return int(self._settings.get("retry.backoff.ms", 100))

    @property
    def need_update(self) -> bool:
        """False: a view is the metadata as it was answered."""
        return False

    @property
    def metadata_refresh_in_progress(self) -> bool:
        """False: the producer refreshes its metadata out of the partitioner's sight."""
        return False

    def __getattr__(self, name: str) -> Any:
        if name in _MUTATORS:
            raise AttributeError(
                f"the cluster view handed to a partitioner is read-only, so it has no {name}(): "
                "the producer refreshes its metadata itself (metadata_max_age_ms, and at once "
                "for a topic it does not know); read it with partitions_for_topic() and the like"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __str__(self) -> str:
        brokers, topics = len(self.brokers()), len(self._cluster.topics)
        return f"ClusterMetadata(brokers: {brokers}, topics: {topics}, coordinators: 0)"

    def __repr__(self) -> str:
        return f"ClusterMetadataView({self._cluster!r})"


def _kafka_python_partitioner_class() -> Optional[type]:
    try:
        from kafka.partitioner import Partitioner as KafkaPythonBase
    except ImportError:  # kafka-python is not installed: no object can be one of its partitioners
        return None
    return KafkaPythonBase  # type: ignore[no-any-return]


def is_kafka_python_partitioner(obj: Any) -> bool:
    base = _kafka_python_partitioner_class()
    return base is not None and isinstance(obj, base)


def _positional_count(method: Any) -> int:
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return 6
    count = 0
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            return 6
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


class KafkaPythonPartitioner(Partitioner):
    """A partitioner object configured with kafka-python's ``partitioner=``, called as kafka-python
    3 calls it: ``partition(topic, key, key_bytes, value, value_bytes, cluster)`` with the
    cluster as a :class:`ClusterMetadataView`; or, for an object that is no
    ``kafka.partitioner.Partitioner`` and whose ``partition`` takes three arguments,
    ``partition(topic, key_bytes, cluster)`` (kafka-python's older protocol). A ``None`` answer
    raises ``ValueError``, as in kafka-python; ``on_new_batch`` is passed on when it has one."""

    def __init__(self, partitioner: Any) -> None:
        self.partitioner = partitioner
        method = partitioner.partition
        self._legacy = (
            not is_kafka_python_partitioner(partitioner) and _positional_count(method) == 3
        )
        self._partition = method
        self._on_new_batch = getattr(partitioner, "on_new_batch", None)
        self.has_on_new_batch = callable(self._on_new_batch)
        self._view: Optional[ClusterMetadataView] = None
        self._settings: Mapping[str, Any] = {}

    def _view_of(self, cluster: Any) -> ClusterMetadataView:
        view = self._view
        if view is None or view.cluster is not cluster:
            view = self._view = ClusterMetadataView(cluster, self._settings)
        return view

    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int:
        view = self._view_of(cluster)
        if self._legacy:
            part = self._partition(topic, key_bytes, view)
        else:
            part = self._partition(topic, key, key_bytes, value, value_bytes, view)
        if part is None:
            raise ValueError(f"Partitioner did not assign a partition for topic {topic}!")
        return part  # type: ignore[no-any-return]

    def on_new_batch(self, topic: str, cluster: Any, prev_partition: int) -> None:
        if self._on_new_batch is not None:
            self._on_new_batch(topic, self._view_of(cluster), prev_partition)

    def configure(self, configs: Mapping[str, Any]) -> None:
        # the settings the cluster view answers with (bootstrap_brokers(), config, ttl())
        self._settings = {k: configs[k] for k in _VIEW_SETTINGS if k in configs}
        self._view = None
        configure = getattr(self.partitioner, "configure", None)
        if callable(configure):
            configure(configs)

    def close(self) -> None:
        close = getattr(self.partitioner, "close", None)
        if callable(close):
            close()

    def __repr__(self) -> str:
        return f"KafkaPythonPartitioner({self.partitioner!r})"


_BY_NAME: Dict[str, Callable[[], Partitioner]] = {}
for _cls, _names in (
    (DefaultPartitioner, ("default", "DefaultPartitioner")),
    (UniformStickyPartitioner, ("uniform_sticky", "UniformStickyPartitioner")),
    (RoundRobinPartitioner, ("round_robin", "RoundRobinPartitioner")),
):
    for _name in _names:
        _BY_NAME[_name] = _cls
    _java = _names[1]
    _BY_NAME[f"org.apache.kafka.clients.producer.{_java}"] = _cls
    _BY_NAME[f"org.apache.kafka.clients.producer.internals.{_java}"] = _cls

_ALLOWED = (
    "None (the built-in partitioner), 'default', 'uniform_sticky', 'round_robin' (or "
    "DefaultPartitioner, UniformStickyPartitioner, RoundRobinPartitioner, with or without Java's "
    "package), an object with partition(topic, key, key_bytes, value, value_bytes, cluster), a "
    "class making one, or a callable(key_bytes, all_partitions, available_partitions)"
)


def resolve_partitioner(spec: Any, kafka_python: bool = False) -> Any:
    """The partitioner for a ``partitioner.class`` setting: None -> None (the built-in logic); a
    name -> a legacy partitioner; an object with ``partition`` -> itself; a class -> an instance;
    a plain callable -> CallablePartitioner. Anything else raises ConfigError.

    ``kafka_python``: the setting was spelled ``partitioner`` (kafka-python's name): an object
    that is not one of this module's ``Partitioner``s is called with kafka-python's protocol
    (``KafkaPythonPartitioner``). A ``kafka.partitioner.Partitioner`` always is."""
    resolved = _resolve(spec)
    if resolved is None or isinstance(resolved, (CallablePartitioner, KafkaPythonPartitioner)):
        return resolved
    if is_kafka_python_partitioner(resolved) or (
        kafka_python and not isinstance(resolved, Partitioner)
    ):
        return KafkaPythonPartitioner(resolved)
    return resolved


def _resolve(spec: Any) -> Any:
    if spec is None:
        return None
    if isinstance(spec, str):
        cls = _BY_NAME.get(spec.strip())
        if cls is None:
            raise ConfigError(f"partitioner: unknown name {spec!r}; allowed: {_ALLOWED}")
        return cls()
    if isinstance(spec, type):
        if not callable(getattr(spec, "partition", None)):
            raise ConfigError(
                f"partitioner: class {spec.__name__} has no partition() method; allowed: {_ALLOWED}"
            )
        try:
            instance = spec()
        except TypeError as exc:
            raise ConfigError(
                f"partitioner: class {spec.__name__} cannot be made without arguments ({exc})"
            ) from None
        return instance
    if callable(getattr(spec, "partition", None)):
        return spec
    if callable(spec):
        return CallablePartitioner(spec)
    raise ConfigError(f"partitioner: got {type(spec).__name__} {spec!r}; allowed: {_ALLOWED}")
