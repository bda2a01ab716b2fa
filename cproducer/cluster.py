"""The producer's immutable view of the cluster (Java's Node, TopicPartition, Cluster...).

A new ``Cluster`` is built for every metadata update; readers never see one change under them.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, List, NamedTuple, Optional, Sequence, Tuple


class Node(NamedTuple):
    id: int
    host: str
    port: int
    rack: Optional[str] = None

    def __str__(self) -> str:
        return f"{self.host}:{self.port} (id: {self.id} rack: {self.rack})"


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class PartitionInfo(NamedTuple):
    topic: str
    partition: int
    leader: Optional[Node]
    replicas: Tuple[Node, ...] = ()
    in_sync_replicas: Tuple[Node, ...] = ()
    offline_replicas: Tuple[Node, ...] = ()

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class Cluster:
    """Nodes, and partitions by topic / by node, precomputed once."""

    __slots__ = (
        "_nodes",
        "_nodes_by_id",
        "_by_tp",
        "_by_topic",
        "_available_by_topic",
        "_by_node",
        "unauthorized_topics",
        "invalid_topics",
        "internal_topics",
        "controller",
        "cluster_id",
        "is_bootstrap_configured",
    )

    def __init__(
        self,
        nodes: Iterable[Node],
        partitions: Iterable[PartitionInfo],
        unauthorized_topics: Iterable[str] = (),
        invalid_topics: Iterable[str] = (),
        internal_topics: Iterable[str] = (),
        controller: Optional[Node] = None,
        cluster_id: Optional[str] = None,
        is_bootstrap_configured: bool = False,
    ) -> None:
        self._nodes: Tuple[Node, ...] = tuple(nodes)
        self._nodes_by_id: Dict[int, Node] = {n.id: n for n in self._nodes}
        self._by_tp: Dict[TopicPartition, PartitionInfo] = {}
        by_topic: Dict[str, List[PartitionInfo]] = {}
        by_node: Dict[int, List[PartitionInfo]] = {}
        for p in partitions:
            self._by_tp[TopicPartition(p.topic, p.partition)] = p
            by_topic.setdefault(p.topic, []).append(p)
            if p.leader is not None:
                by_node.setdefault(p.leader.id, []).append(p)
        self._by_topic: Dict[str, Tuple[PartitionInfo, ...]] = {
            t: tuple(sorted(ps, key=lambda p: p.partition)) for t, ps in by_topic.items()
        }
        self._available_by_topic: Dict[str, Tuple[PartitionInfo, ...]] = {
            t: tuple(p for p in ps if p.leader is not None) for t, ps in self._by_topic.items()
        }
        self._by_node: Dict[int, Tuple[PartitionInfo, ...]] = {
            n: tuple(ps) for n, ps in by_node.items()
        }
        self.unauthorized_topics: FrozenSet[str] = frozenset(unauthorized_topics)
        self.invalid_topics: FrozenSet[str] = frozenset(invalid_topics)
        self.internal_topics: FrozenSet[str] = frozenset(internal_topics)
        self.controller = controller
        self.cluster_id = cluster_id
        self.is_bootstrap_configured = is_bootstrap_configured

    @classmethod
    def empty(cls) -> Cluster:
        return cls((), ())

    @classmethod
    def bootstrap(cls, addresses: Sequence[Tuple[str, int]]) -> Cluster:
        """Nodes for the bootstrap servers, with ids -1, -2, ... as Java does."""
        nodes = [Node(-(i + 1), host, port) for i, (host, port) in enumerate(addresses)]
        return cls(nodes, (), is_bootstrap_configured=True)

    def with_partitions(self, partitions: Iterable[PartitionInfo]) -> Cluster:
        merged = dict(self._by_tp)
        for p in partitions:
            merged[TopicPartition(p.topic, p.partition)] = p
        return Cluster(
            self._nodes,
            merged.values(),
            self.unauthorized_topics,
            self.invalid_topics,
            self.internal_topics,
            self.controller,
            self.cluster_id,
        )

    @property
    def nodes(self) -> List[Node]:
        return list(self._nodes)

    @property
    def topics(self) -> FrozenSet[str]:
        return frozenset(self._by_topic)

    def node_by_id(self, node_id: int) -> Optional[Node]:
        return self._nodes_by_id.get(node_id)

    def leader_for(self, tp: TopicPartition) -> Optional[Node]:
        p = self._by_tp.get(tp)
        return None if p is None else p.leader

    def partition(self, tp: TopicPartition) -> Optional[PartitionInfo]:
        return self._by_tp.get(tp)

    def partitions_for_topic(self, topic: str) -> Tuple[PartitionInfo, ...]:
        return self._by_topic.get(topic, ())

    def available_partitions_for_topic(self, topic: str) -> Tuple[PartitionInfo, ...]:
        return self._available_by_topic.get(topic, ())

    def partitions_for_node(self, node_id: int) -> Tuple[PartitionInfo, ...]:
        return self._by_node.get(node_id, ())

    def partition_count_for_topic(self, topic: str) -> Optional[int]:
        ps = self._by_topic.get(topic)
        return None if ps is None else len(ps)

    def __repr__(self) -> str:
        return (
            f"Cluster(id={self.cluster_id}, nodes={list(self._nodes)}, "
            f"partitions={len(self._by_tp)})"
        )
