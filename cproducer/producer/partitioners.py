"""Custom partitioners: the protocol, and the legacy ones (Java's) for comparison.

With no partitioner configured the producer uses the built-in KIP-794 logic
(``producer.internals.built_in_partitioner.BuiltInPartitioner``, called from the accumulator):
keyed records by murmur2, unkeyed ones sticky with uniform or adaptive switching.

A custom partitioner is an object with
``partition(topic, key, key_bytes, value, value_bytes, cluster) -> int`` and, optionally,
``configure(configs)``, ``close()`` and ``on_new_batch(topic, cluster, prev_partition)`` (subclass
``Partitioner`` to get no-op defaults). Returning ``-1`` hands the choice to the built-in logic, as
KIP-794 allows. A plain callable ``f(key_bytes, all_partitions, available_partitions)`` (lists of
partition ids, as kafka-python passes them) is accepted too.

The legacy partitioners, selectable by name (``resolve_partitioner``):

- ``DefaultPartitioner`` (Java's before Kafka 2.4): keyed records by murmur2 over all partitions;
  unkeyed records by a per-topic counter that starts at a random value,
  ``toPositive(counter++) % n`` over the available partitions (over all partitions when none is
  available).
- ``UniformStickyPartitioner`` (KIP-480, Java 2.4 to 3.x): ignores keys; sticks to one partition
  until ``on_new_batch`` reports a new batch on it, then moves to another available partition
  picked at random (Java's ``StickyPartitionCache``).
- ``RoundRobinPartitioner``: ignores keys; a per-topic counter from 0 over the available
  partitions. The ``on_new_batch`` quirk: the producer calls ``partition`` a second time for a
  record whose append was aborted for a new batch, which alone would make the counter skip a
  partition at every new batch (KAFKA-9965: uneven, even half-empty, partitions). Java 3.x's fix
  is kept: ``on_new_batch`` queues the partition the record had been given and the next
  ``partition`` call for the topic takes it back. (Java 4 removed ``onNewBatch``, and the queue
  with it; our producer still calls ``on_new_batch`` as Java 3.x did.)
"""

from __future__ import annotations

import numbers
import random as _random
import threading
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Tuple

from cproducer.errors import ConfigError
from cproducer.utils.murmur2 import partition_for_key

__all__ = [
    "CallablePartitioner",
    "DefaultPartitioner",
    "Partitioner",
    "RoundRobinPartitioner",
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
        is called again for it right after."""


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


class DefaultPartitioner(Partitioner):
    """Java's DefaultPartitioner before Kafka 2.4: murmur2 for keyed records, a per-topic
    round-robin counter starting at a random value for the others. ``random_start`` (a zero-arg
    callable returning an int) replaces the random start value, for tests."""

    def __init__(self, random_start: Optional[Callable[[], int]] = None) -> None:
        self._counters = _Counters(random_start or (lambda: _random.getrandbits(32)))

    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int:
        if key_bytes is not None:
            return int(partition_for_key(key_bytes, len(_partitions(cluster, topic))))
        return _round_robin(self._counters.next(topic), topic, cluster)


class UniformStickyPartitioner(Partitioner):
    """KIP-480: every record of a topic goes to its sticky partition, whatever its key, until
    ``on_new_batch`` reports a new batch on that partition (Java's StickyPartitionCache). ``rng``
    (a ``random.Random``) is for tests."""

    def __init__(self, rng: Optional[_random.Random] = None) -> None:
        self._sticky: Dict[str, int] = {}
        self._lock = threading.Lock()
        self._rng = rng or _random.Random()

    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int:
        part = self._sticky.get(topic)
        if part is None:
            return self._next(topic, cluster, -1)
        return part

    def on_new_batch(self, topic: str, cluster: Any, prev_partition: int) -> None:
        self._next(topic, cluster, prev_partition)

    def _next(self, topic: str, cluster: Any, prev: int) -> int:
        with self._lock:
            old = self._sticky.get(topic)
            if old is not None and old != prev:
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


def resolve_partitioner(spec: Any) -> Any:
    """The partitioner for a ``partitioner.class`` setting: None -> None (the built-in logic); a
    name -> a legacy partitioner; an object with ``partition`` -> itself; a class -> an instance;
    a plain callable -> CallablePartitioner. Anything else raises ConfigError."""
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
