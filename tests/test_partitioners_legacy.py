"""Legacy partitioners as the seeds describe them, custom partitioners, name resolution."""

from __future__ import annotations

import random

import pytest

from cproducer._murmur2 import partition_for_key
from cproducer.cluster import Cluster, Node, PartitionInfo
from cproducer.errors import ConfigError
from cproducer.partitioners import (
    CallablePartitioner,
    DefaultPartitioner,
    RoundRobinPartitioner,
    UniformStickyPartitioner,
    resolve_partitioner,
)

N = Node(1, "h", 1)


def cluster(n=4, leaderless=()):
    return Cluster(
        [N], [PartitionInfo("t", p, None if p in leaderless else N, (), ()) for p in range(n)]
    )


def test_default_partitioner_round_robin_from_a_random_start() -> None:
    p = DefaultPartitioner(random_start=lambda: 6)
    c = cluster(4)
    assert [p.partition("t", None, None, None, None, c) for _ in range(6)] == [2, 3, 0, 1, 2, 3]


def test_default_partitioner_over_available_then_all() -> None:
    p = DefaultPartitioner(random_start=lambda: 0)
    c = cluster(4, leaderless=(1, 3))
    assert [p.partition("t", None, None, None, None, c) for _ in range(4)] == [0, 2, 0, 2]
    p2 = DefaultPartitioner(random_start=lambda: 0)
    none = cluster(3, leaderless=(0, 1, 2))
    assert [p2.partition("t", None, None, None, None, none) for _ in range(4)] == [0, 1, 2, 0]


def test_default_partitioner_keyed_is_murmur2_over_all_partitions() -> None:
    p = DefaultPartitioner()
    c = cluster(5, leaderless=(0, 1))
    for key in (b"a", b"user-7", b"xyz" * 10):
        assert p.partition("t", key, key, None, None, c) == partition_for_key(key, 5)


def test_uniform_sticky_sticks_until_a_new_batch() -> None:
    p = UniformStickyPartitioner(rng=random.Random(1))
    c = cluster(4)
    first = p.partition("t", b"k", b"k", None, None, c)
    assert all(p.partition("t", b"k2", b"k2", None, None, c) == first for _ in range(20))
    p.on_new_batch("t", c, first)
    second = p.partition("t", None, None, None, None, c)
    assert second != first
    p.on_new_batch("t", c, first)  # stale notification: the partition stays
    assert p.partition("t", None, None, None, None, c) == second


def test_round_robin_and_its_new_batch_reuse() -> None:
    p = RoundRobinPartitioner()
    c = cluster(3)
    assert [p.partition("t", None, None, None, None, c) for _ in range(4)] == [0, 1, 2, 0]
    p.on_new_batch("t", c, 0)  # the record that was aborted for a new batch keeps partition 0
    assert p.partition("t", None, None, None, None, c) == 0
    assert p.partition("t", None, None, None, None, c) == 1


def test_callable_and_resolution() -> None:
    seen = []

    def fn(key_bytes, all_parts, available):
        seen.append((key_bytes, all_parts, available))
        return all_parts[-1]

    p = resolve_partitioner(fn)
    assert isinstance(p, CallablePartitioner)
    assert p.partition("t", b"k", b"k", None, None, cluster(3, leaderless=(1,))) == 2
    assert seen == [(b"k", [0, 1, 2], [0, 2])]
    assert isinstance(resolve_partitioner("round_robin"), RoundRobinPartitioner)
    assert isinstance(
        resolve_partitioner("org.apache.kafka.clients.producer.RoundRobinPartitioner"),
        RoundRobinPartitioner,
    )
    assert isinstance(resolve_partitioner(DefaultPartitioner), DefaultPartitioner)
    assert resolve_partitioner(None) is None
    with pytest.raises(ConfigError, match="partitioner: unknown name 'nope'"):
        resolve_partitioner("nope")
    with pytest.raises(ConfigError, match="got int"):
        resolve_partitioner(5)
