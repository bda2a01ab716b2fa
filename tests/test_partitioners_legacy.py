"""Legacy partitioners (Java's), custom partitioners, and name resolution."""

from __future__ import annotations

import random
import threading
from collections import Counter
from typing import Any, Iterable, List

import numpy as np
import pytest

from cproducer.cluster import Cluster, Node, PartitionInfo
from cproducer.errors import ConfigError
from cproducer.producer.partitioners import (
    CallablePartitioner,
    DefaultPartitioner,
    Partitioner,
    RoundRobinPartitioner,
    UniformStickyPartitioner,
    resolve_partitioner,
)
from cproducer.utils.murmur2 import partition_for_key

N = Node(1, "h", 1)


def cluster(n: int = 4, leaderless: Iterable[int] = (), topic: str = "t") -> Cluster:
    down = set(leaderless)
    parts = [PartitionInfo(topic, p, None if p in down else N, (), ()) for p in range(n)]
    return Cluster([N], parts)


def unkeyed(p: Any, c: Cluster, count: int, topic: str = "t") -> List[int]:
    return [p.partition(topic, None, None, b"v", b"v", c) for _ in range(count)]


# -- DefaultPartitioner (before Kafka 2.4) --------------------------------------------------------


def test_default_partitioner_round_robin_from_a_random_start() -> None:
    p = DefaultPartitioner(random_start=lambda: 6)
    assert unkeyed(p, cluster(4), 6) == [2, 3, 0, 1, 2, 3]


def test_default_partitioner_over_available_then_all() -> None:
    p = DefaultPartitioner(random_start=lambda: 0)
    assert unkeyed(p, cluster(4, leaderless=(1, 3)), 4) == [0, 2, 0, 2]
    p2 = DefaultPartitioner(random_start=lambda: 0)
    assert unkeyed(p2, cluster(3, leaderless=(0, 1, 2)), 4) == [0, 1, 2, 0]


def test_default_partitioner_counter_is_a_java_int() -> None:
    # toPositive(MAX_VALUE) % 3 = 1, then the counter wraps to MIN_VALUE: toPositive = 0
    p = DefaultPartitioner(random_start=lambda: 2**31 - 1)
    assert unkeyed(p, cluster(3), 3) == [1, 0, 1]
    # a negative start (Java's nextInt() may be one): toPositive(-1) = MAX_VALUE
    p = DefaultPartitioner(random_start=lambda: -1)
    assert unkeyed(p, cluster(5), 2) == [(2**31 - 1) % 5, 0]


def test_default_partitioner_counts_per_topic() -> None:
    p = DefaultPartitioner(random_start=lambda: 0)
    both = Cluster([N], [PartitionInfo(t, i, N) for t in ("a", "b") for i in range(3)])
    assert unkeyed(p, both, 2, "a") == [0, 1]
    assert unkeyed(p, both, 2, "b") == [0, 1]
    assert unkeyed(p, both, 1, "a") == [2]


def test_default_partitioner_random_starts_differ() -> None:
    c = cluster(1000)
    starts = {DefaultPartitioner().partition("t", None, None, None, None, c) for _ in range(20)}
    assert len(starts) > 10


def test_default_partitioner_keyed_is_murmur2_over_all_partitions() -> None:
    p = DefaultPartitioner()
    c = cluster(5, leaderless=(0, 1))
    for key in (b"a", b"user-7", b"xyz" * 10, b""):
        assert p.partition("t", key, key, None, None, c) == partition_for_key(key, 5)


def test_unknown_topics_are_refused_by_name() -> None:
    for p in (DefaultPartitioner(), RoundRobinPartitioner(), UniformStickyPartitioner()):
        with pytest.raises(ValueError, match="topic 'x' has no partitions"):
            p.partition("x", None, None, None, None, cluster(3, leaderless=(0, 1, 2)))


# -- UniformStickyPartitioner (KIP-480) ---------------------------------------------------------


def test_uniform_sticky_sticks_until_a_new_batch_whatever_the_key() -> None:
    p = UniformStickyPartitioner(rng=random.Random(1))
    c = cluster(4)
    first = p.partition("t", b"k", b"k", None, None, c)
    assert all(p.partition("t", b"k2", b"k2", None, None, c) == first for _ in range(20))
    p.on_new_batch("t", c, first)
    second = p.partition("t", None, None, None, None, c)
    assert second != first
    p.on_new_batch("t", c, first)  # a stale notification: the partition stays
    assert p.partition("t", None, None, None, None, c) == second


def test_uniform_sticky_moves_to_every_other_available_partition_evenly() -> None:
    p = UniformStickyPartitioner(rng=random.Random(5))
    c = cluster(6, leaderless=(2,))
    moves: Counter = Counter()
    current = p.partition("t", None, None, None, None, c)
    for _ in range(4000):
        p.on_new_batch("t", c, current)
        new = p.partition("t", None, None, None, None, c)
        assert new != current and new != 2
        moves[new] += 1
        current = new
    assert set(moves) == {0, 1, 3, 4, 5}
    expected = 4000 / 5
    chi2 = sum((moves[k] - expected) ** 2 / expected for k in moves)
    assert chi2 < 18.467, moves  # dof 4, p = 0.001


def test_uniform_sticky_with_one_or_no_available_partition() -> None:
    p = UniformStickyPartitioner(rng=random.Random(2))
    one = cluster(4, leaderless=(0, 1, 3))
    assert p.partition("t", None, None, None, None, one) == 2
    p.on_new_batch("t", one, 2)
    assert p.partition("t", None, None, None, None, one) == 2  # nowhere else to go
    p2 = UniformStickyPartitioner(rng=random.Random(3))
    none = cluster(3, leaderless=(0, 1, 2))
    assert p2.partition("t", None, None, None, None, none) in (0, 1, 2)


# -- RoundRobinPartitioner ----------------------------------------------------------------------


def test_round_robin_over_available_partitions_then_all() -> None:
    p = RoundRobinPartitioner()
    assert unkeyed(p, cluster(3), 4) == [0, 1, 2, 0]
    p = RoundRobinPartitioner()
    assert unkeyed(p, cluster(5, leaderless=(1, 2)), 4) == [0, 3, 4, 0]
    assert p.partition("t", b"key", b"key", None, None, cluster(5)) == 4  # keys ignored
    p = RoundRobinPartitioner()
    assert unkeyed(p, cluster(3, leaderless=(0, 1, 2)), 4) == [0, 1, 2, 0]


def test_round_robin_new_batch_reuses_the_partition() -> None:
    p = RoundRobinPartitioner()
    c = cluster(3)
    assert unkeyed(p, c, 4) == [0, 1, 2, 0]
    p.on_new_batch("t", c, 0)  # the record aborted for a new batch keeps partition 0
    assert unkeyed(p, c, 2) == [0, 1]
    p.on_new_batch("u", c, 2)  # queues are per topic
    assert unkeyed(p, c, 1) == [2]


def test_round_robin_stays_even_when_every_other_record_starts_a_batch() -> None:
    # KAFKA-9965: with the producer calling partition() again after an aborted append, a plain
    # counter would send nothing to every other partition; the queue keeps the walk even
    p = RoundRobinPartitioner()
    c = cluster(4)
    counts: Counter = Counter()
    for i in range(400):
        part = p.partition("t", None, None, None, None, c)
        if i % 2 == 0:  # the append was aborted: a new batch is needed
            p.on_new_batch("t", c, part)
            part = p.partition("t", None, None, None, None, c)
        counts[part] += 1
    assert counts == {0: 100, 1: 100, 2: 100, 3: 100}


def test_round_robin_threads_hand_out_every_value_once() -> None:
    p = RoundRobinPartitioner()
    c = cluster(8)
    results: List[int] = []
    lock = threading.Lock()

    def work() -> None:
        got = unkeyed(p, c, 1000)
        with lock:
            results.extend(got)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert Counter(results) == {k: 500 for k in range(8)}


# -- custom partitioners ------------------------------------------------------------------------


def test_callable_gets_partition_id_lists() -> None:
    seen = []

    def fn(key_bytes: Any, all_parts: List[int], available: List[int]) -> int:
        seen.append((key_bytes, list(all_parts), list(available)))
        all_parts.clear()  # mutating what it got does not touch the next call's lists
        return available[-1]

    p = resolve_partitioner(fn)
    assert isinstance(p, CallablePartitioner)
    c = cluster(3, leaderless=(1,))
    assert p.partition("t", b"k", b"k", None, None, c) == 2
    assert p.partition("t", None, None, None, None, c) == 2
    assert seen == [(b"k", [0, 1, 2], [0, 2]), (None, [0, 1, 2], [0, 2])]
    other = cluster(2)
    assert p.partition("t", None, None, None, None, other) == 1  # a new view is read


def test_callable_results_are_checked() -> None:
    assert CallablePartitioner(lambda k, a, v: np.int64(1)).partition("t", 0, 0, 0, 0, cluster())
    with pytest.raises(TypeError, match="returned None; expected a partition id"):
        CallablePartitioner(lambda k, a, v: None).partition("t", 0, 0, 0, 0, cluster())
    with pytest.raises(TypeError, match="returned 1.5"):
        CallablePartitioner(lambda k, a, v: 1.5).partition("t", 0, 0, 0, 0, cluster())
    with pytest.raises(TypeError, match="returned True"):
        CallablePartitioner(lambda k, a, v: True).partition("t", 0, 0, 0, 0, cluster())
    with pytest.raises(TypeError, match="fn must be callable"):
        CallablePartitioner(3)  # type: ignore[arg-type]


def test_partitioner_base_class_defaults() -> None:
    class Fixed(Partitioner):
        def partition(
            self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, cluster: Any
        ) -> int:
            return -1  # let the built-in logic choose

    p = resolve_partitioner(Fixed)
    assert isinstance(p, Fixed) and p.partition("t", None, None, None, None, cluster()) == -1
    p.configure({"acks": "all"})
    p.on_new_batch("t", cluster(), 0)
    p.close()
    with pytest.raises(NotImplementedError):
        Partitioner().partition("t", None, None, None, None, cluster())


def test_resolution_by_name_object_class_and_callable() -> None:
    for names, cls in (
        (
            (
                "default",
                "DefaultPartitioner",
                "org.apache.kafka.clients.producer.internals.DefaultPartitioner",
            ),
            DefaultPartitioner,
        ),
        (
            (
                "uniform_sticky",
                "UniformStickyPartitioner",
                "org.apache.kafka.clients.producer.UniformStickyPartitioner",
            ),
            UniformStickyPartitioner,
        ),
        (
            (
                "round_robin",
                "RoundRobinPartitioner",
                "org.apache.kafka.clients.producer.RoundRobinPartitioner",
                " round_robin ",
            ),
            RoundRobinPartitioner,
        ),
    ):
        for name in names:
            assert type(resolve_partitioner(name)) is cls, name
    assert resolve_partitioner(None) is None
    instance = RoundRobinPartitioner()
    assert resolve_partitioner(instance) is instance
    assert isinstance(resolve_partitioner(DefaultPartitioner), DefaultPartitioner)

    class Duck:
        def partition(self, *args: Any) -> int:
            return 0

    duck = Duck()
    assert resolve_partitioner(duck) is duck


def test_resolution_errors_name_the_setting_and_what_is_allowed() -> None:
    with pytest.raises(ConfigError, match="partitioner: unknown name 'nope'; allowed: None"):
        resolve_partitioner("nope")
    with pytest.raises(ConfigError, match="partitioner: got int 5; allowed: .*round_robin"):
        resolve_partitioner(5)
    with pytest.raises(ConfigError, match="class dict has no partition"):
        resolve_partitioner(dict)

    class NeedsArgs(Partitioner):
        def __init__(self, x: int) -> None:
            self.x = x

    with pytest.raises(ConfigError, match="NeedsArgs cannot be made without arguments"):
        resolve_partitioner(NeedsArgs)
