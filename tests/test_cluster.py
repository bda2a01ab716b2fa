"""Cluster: the immutable view's lookups, constructors, copies and input checks."""

from __future__ import annotations

from typing import Any

import pytest

from cproducer.cluster import Cluster, Node, PartitionInfo, TopicPartition

A, B, C = Node(1, "a", 9092), Node(2, "b", 9092, "rack-b"), Node(3, "c", 9092)


def sample() -> Cluster:
    return Cluster(
        [A, B, C],
        [
            PartitionInfo("t", 1, B, (A, B), (B,)),
            PartitionInfo("t", 0, A, (A, B), (A, B)),
            PartitionInfo("t", 2, None, (A,), (), (A,)),
            PartitionInfo("u", 0, A, (A,), (A,)),
        ],
        unauthorized_topics={"secret"},
        invalid_topics=["bad name"],
        internal_topics=("__consumer_offsets",),
        controller=B,
        cluster_id="abc",
    )


def test_lookups() -> None:
    c = sample()
    assert [p.partition for p in c.partitions_for_topic("t")] == [0, 1, 2]
    assert [p.partition for p in c.available_partitions_for_topic("t")] == [0, 1]
    assert c.partitions_for_topic("x") == () and c.available_partitions_for_topic("x") == ()
    assert [(p.topic, p.partition) for p in c.partitions_for_node(1)] == [("t", 0), ("u", 0)]
    assert c.partitions_for_node(3) == () and c.partitions_for_node(99) == ()
    assert c.leader_for(TopicPartition("t", 1)) == B
    assert c.leader_for(("t", 1)) == B  # a plain tuple works too
    assert c.leader_for(TopicPartition("t", 2)) is None
    assert c.leader_for(TopicPartition("x", 0)) is None
    partition = c.partition(TopicPartition("t", 2))
    assert partition is not None and partition.offline_replicas == (A,)
    assert partition.topic_partition == TopicPartition("t", 2)
    assert c.partition(TopicPartition("t", 7)) is None
    assert c.partition_count_for_topic("t") == 3 and c.partition_count_for_topic("x") is None
    assert c.node_by_id(2) == B and c.node_by_id(9) is None
    assert c.topics == frozenset({"t", "u"})
    assert c.unauthorized_topics == frozenset({"secret"})
    assert c.invalid_topics == frozenset({"bad name"})
    assert c.internal_topics == frozenset({"__consumer_offsets"})
    assert c.controller == B and c.cluster_id == "abc" and not c.is_bootstrap_configured
    assert c.nodes == [A, B, C]


def test_the_view_cannot_be_changed_through_what_it_returns() -> None:
    c = sample()
    assert isinstance(c.partitions_for_topic("t"), tuple)
    assert isinstance(c.available_partitions_for_topic("t"), tuple)
    assert isinstance(c.partitions_for_node(1), tuple)
    nodes = c.nodes
    nodes.append(Node(9, "z", 1))
    assert len(c.nodes) == 3  # a fresh list each time
    attrs: Any = c
    for name in ("controller", "cluster_id", "unauthorized_topics", "is_bootstrap_configured"):
        with pytest.raises(AttributeError):
            setattr(attrs, name, None)
    with pytest.raises(AttributeError):
        attrs.extra = 1  # __slots__


def test_duplicate_partitions_keep_the_last_one_once() -> None:
    c = Cluster([A, B], [PartitionInfo("t", 0, A), PartitionInfo("t", 0, B)])
    assert c.partitions_for_topic("t") == (PartitionInfo("t", 0, B),)
    assert c.partitions_for_node(1) == () and len(c.partitions_for_node(2)) == 1


def test_with_partitions_adds_and_overrides_in_a_copy() -> None:
    c = sample()
    more = c.with_partitions([PartitionInfo("v", 0, B), PartitionInfo("t", 2, C)])
    assert more.partition_count_for_topic("v") == 1 and c.partition_count_for_topic("v") is None
    assert more.leader_for(TopicPartition("t", 2)) == C
    assert c.leader_for(TopicPartition("t", 2)) is None  # the original is unchanged
    assert [p.partition for p in more.available_partitions_for_topic("t")] == [0, 1, 2]
    assert more.controller == B and more.cluster_id == "abc"
    assert more.unauthorized_topics == c.unauthorized_topics
    by_map = c.with_partitions({TopicPartition("w", 0): PartitionInfo("w", 0, A)})
    assert by_map.partition_count_for_topic("w") == 1


def test_bootstrap_nodes_have_negative_ids() -> None:
    c = Cluster.bootstrap([("h1", 1), ("h2", 2)])
    assert c.nodes == [Node(-1, "h1", 1), Node(-2, "h2", 2)] and c.is_bootstrap_configured
    assert c.topics == frozenset() and c.partitions_for_topic("t") == ()
    empty = Cluster.empty()
    assert empty.nodes == [] and empty.topics == frozenset() and not empty.is_bootstrap_configured
    assert empty.partition_count_for_topic("t") is None


def test_bad_input_is_named() -> None:
    with pytest.raises(TypeError, match="nodes must hold Node objects, got tuple"):
        Cluster([(1, "h", 1)], [])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="partitions must hold PartitionInfo objects"):
        Cluster([A], [("t", 0, A)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="the leader of t-0 must be a Node or None, got int"):
        Cluster([A], [PartitionInfo("t", 0, 1)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unauthorized_topics must be a collection"):
        Cluster([A], [], unauthorized_topics="topic")
    with pytest.raises(TypeError, match="invalid_topics must hold topic names"):
        Cluster([A], [], invalid_topics=[1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="controller must be a Node"):
        Cluster([A], [], controller=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cluster_id must be a str"):
        Cluster([A], [], cluster_id=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"\(host, port\) pairs, got 'h:1'"):
        Cluster.bootstrap(["h:1"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"\(host: str, port: int\) pairs, got \('h', '1'\)"):
        Cluster.bootstrap([("h", "1")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="partitions must hold PartitionInfo"):
        sample().with_partitions([1])  # type: ignore[list-item]


def test_value_types() -> None:
    assert hash(Node(1, "a", 1)) == hash(Node(1, "a", 1)) and {A: 1}[Node(1, "a", 9092)] == 1
    assert str(B) == "b:9092 (id: 2 rack: rack-b)" and B.has_rack() and not A.has_rack()
    assert A.id_string == "1"
    assert str(TopicPartition("t", 3)) == "t-3" and TopicPartition("t", 3) == ("t", 3)
    info = PartitionInfo("t", 2, None, (A, B), (B,), (A,))
    assert str(info) == (
        "Partition(topic = t, partition = 2, leader = none, replicas = [1,2], isr = [2], "
        "offlineReplicas = [1])"
    )
    assert "partitions=4" in repr(sample())
