"""Cluster: the immutable view's lookups."""

from __future__ import annotations

from cproducer.cluster import Cluster, Node, PartitionInfo, TopicPartition

A, B = Node(1, "a", 9092), Node(2, "b", 9092)


def test_lookups() -> None:
    c = Cluster(
        [A, B],
        [
            PartitionInfo("t", 1, B, (A, B), (B,)),
            PartitionInfo("t", 0, A, (A, B), (A, B)),
            PartitionInfo("t", 2, None, (A,), ()),
            PartitionInfo("u", 0, A, (A,), (A,)),
        ],
    )
    assert [p.partition for p in c.partitions_for_topic("t")] == [0, 1, 2]
    assert [p.partition for p in c.available_partitions_for_topic("t")] == [0, 1]
    assert {(p.topic, p.partition) for p in c.partitions_for_node(1)} == {("t", 0), ("u", 0)}
    assert c.leader_for(TopicPartition("t", 1)) == B
    assert c.leader_for(TopicPartition("t", 2)) is None
    assert c.partition_count_for_topic("t") == 3 and c.partition_count_for_topic("x") is None
    assert c.node_by_id(2) == B and c.topics == frozenset({"t", "u"})
    more = c.with_partitions([PartitionInfo("v", 0, B)])
    assert more.partition_count_for_topic("v") == 1 and c.partition_count_for_topic("v") is None
    assert isinstance(c.partitions_for_topic("t"), tuple)  # callers cannot mutate the view


def test_bootstrap_nodes_have_negative_ids() -> None:
    c = Cluster.bootstrap([("h1", 1), ("h2", 2)])
    assert [n.id for n in c.nodes] == [-1, -2] and c.is_bootstrap_configured
    assert Cluster.empty().nodes == []
