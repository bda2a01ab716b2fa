"""Custom partitioners: the protocol, and the legacy ones for comparison.

When no partitioner is configured the producer uses the built-in KIP-794 logic
(``cproducer._partitioner.BuiltInPartitioner``). A custom partitioner is an object with
``partition(topic, key, key_bytes, value, value_bytes, cluster) -> int`` (``-1`` hands the choice to
the built-in logic, as KIP-794 allows) and optional ``configure(configs)``, ``close()``,
``on_new_batch(topic, cluster, prev_partition)``; or a plain callable
``f(key_bytes, all_partitions, available_partitions)`` as kafka-python accepts.

The legacy partitioners, selectable by name:

- ``DefaultPartitioner`` (before Kafka 2.4): keyed records by murmur2 over all partitions; unkeyed
  records round-robin with a per-topic counter that starts at a random value, over the available
  partitions (over all partitions when none is available).
- ``UniformStickyPartitioner`` (KIP-480): ignores keys; sticks to one partition until a new batch
  is created (``on_new_batch``), then moves to another available partition at random.
- ``RoundRobinPartitioner``: a per-topic counter over the available partitions, ignoring keys.
"""

from __future__ import annotations

import random as _random
import threading
from typing import Any, Callable, Dict, List, Optional, Protocol, runtime_checkable

from cproducer._murmur2 import partition_for_key
from cproducer.errors import ConfigError


@runtime_checkable
class Partitioner(Protocol):
    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int: ...


class _Counters:
    """Per-topic counters starting at a random value (Java's AtomicInteger per topic)."""

    def __init__(self, random_start: Optional[Callable[[], int]] = None) -> None:
        self._counters: Dict[str, int] = {}
        self._lock = threading.Lock()
        self._start = random_start or (lambda: _random.randrange(0, 2**31))

    def next(self, topic: str) -> int:
        with self._lock:
            value = self._counters.get(topic)
            if value is None:
                value = self._start()
            self._counters[topic] = (value + 1) & 0xFFFFFFFF
            return value & 0x7FFFFFFF  # Utils.toPositive


class DefaultPartitioner:
    """The pre-2.4 default: murmur2 for keys, round robin over available partitions otherwise."""

    def __init__(self, random_start: Optional[Callable[[], int]] = None) -> None:
        self._counters = _Counters(random_start)

    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int:
        partitions = cluster.partitions_for_topic(topic)
        if key_bytes is not None:
            return partition_for_key(key_bytes, len(partitions))
        n = self._counters.next(topic)
        available = cluster.available_partitions_for_topic(topic)
        if available:
            return available[n % len(available)].partition
        return partitions[n % len(partitions)].partition


class UniformStickyPartitioner:
    """KIP-480: stick to a partition until a new batch is made (Java's StickyPartitionCache)."""

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

    def _next(self, topic: str, cluster: Any, prev: int) -> int:
        with self._lock:
            old = self._sticky.get(topic)
            if old is not None and old != prev:
                return old  # another thread already moved on
            available = cluster.available_partitions_for_topic(topic)
            if len(available) == 1:
                new = available[0].partition
            elif available:
                choices = [p.partition for p in available if p.partition != old]
                new = self._rng.choice(choices)
            else:
                new = self._rng.randrange(len(cluster.partitions_for_topic(topic)))
            self._sticky[topic] = new
            return new

    def on_new_batch(self, topic: str, cluster: Any, prev_partition: int) -> None:
        self._next(topic, cluster, prev_partition)


class RoundRobinPartitioner:
    """Java's RoundRobinPartitioner: a per-topic counter over the available partitions.

    Java's version also re-uses the partition of a record whose first append was aborted for a new
    batch (so that ``on_new_batch`` does not skip a partition); we do the same with a per-topic
    "queue" of one partition to reuse.
    """

    def __init__(self, random_start: Optional[Callable[[], int]] = None) -> None:
        self._counters = _Counters(random_start or (lambda: 0))
        self._reuse: Dict[str, List[int]] = {}

    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int:
        queued = self._reuse.get(topic)
        if queued:
            return queued.pop(0)
        n = self._counters.next(topic)
        available = cluster.available_partitions_for_topic(topic)
        if available:
            return available[n % len(available)].partition
        partitions = cluster.partitions_for_topic(topic)
        return partitions[n % len(partitions)].partition

    def on_new_batch(self, topic: str, cluster: Any, prev_partition: int) -> None:
        self._reuse.setdefault(topic, []).append(prev_partition)


class CallablePartitioner:
    """kafka-python style: ``fn(key_bytes, all_partitions, available_partitions) -> int``."""

    def __init__(self, fn: Callable[[Any, List[int], List[int]], int]) -> None:
        self.fn = fn

    def partition(
        self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
    ) -> int:
        all_ids = [p.partition for p in cluster.partitions_for_topic(topic)]
        available = [p.partition for p in cluster.available_partitions_for_topic(topic)]
        return int(self.fn(key_bytes, all_ids, available))


_BY_NAME: Dict[str, Callable[[], Any]] = {}
for _cls, _names in (
    (DefaultPartitioner, ("default", "DefaultPartitioner")),
    (UniformStickyPartitioner, ("uniform_sticky", "UniformStickyPartitioner")),
    (RoundRobinPartitioner, ("round_robin", "RoundRobinPartitioner")),
):
    for _name in _names:
        _BY_NAME[_name] = _cls
        _BY_NAME[f"org.apache.kafka.clients.producer.{_name}"] = _cls
        _BY_NAME[f"org.apache.kafka.clients.producer.internals.{_name}"] = _cls


def resolve_partitioner(spec: Any) -> Any:
    """None -> None (built-in); a name -> a legacy partitioner; an object with ``partition`` ->
    itself; a class -> an instance; a plain callable -> CallablePartitioner."""
    if spec is None:
        return None
    if isinstance(spec, str):
        cls = _BY_NAME.get(spec)
        if cls is None:
            raise ConfigError(
                f"partitioner: unknown name {spec!r}; allowed: default, uniform_sticky, "
                "round_robin (or their Java class names), an object with partition(), or a "
                "callable(key_bytes, all_partitions, available_partitions)"
            )
        return cls()
    if isinstance(spec, type):
        return resolve_partitioner(spec())
    if hasattr(spec, "partition"):
        return spec
    if callable(spec):
        return CallablePartitioner(spec)
    raise ConfigError(
        f"partitioner: expected None, a name, an object with partition() or a callable; "
        f"got {type(spec).__name__}"
    )
