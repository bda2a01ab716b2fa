"""The producer's immutable view of the cluster (Java's Node, TopicPartition, PartitionInfo and
Cluster).

A new ``Cluster`` is built for every metadata update; nothing in one ever changes, so readers
(the Sender, the accumulator, the partitioners, which cache per Cluster object) never see one
change under them. Every lookup is precomputed in the constructor; the collections handed out are
tuples and frozensets (or fresh lists), so callers cannot change the view.
"""

from __future__ import annotations

from typing import (
    Any,
    Dict,
    FrozenSet,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)


class Node(NamedTuple):
    """A broker: ``id`` (negative for the bootstrap addresses), ``host``, ``port``, ``rack``."""

    id: int
    host: str
    port: int
    rack: Optional[str] = None

    @property
    def id_string(self) -> str:
        return str(self.id)

    def has_rack(self) -> bool:
        return self.rack is not None

    def __str__(self) -> str:
        return f"{self.host}:{self.port} (id: {self.id} rack: {self.rack})"


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class PartitionInfo(NamedTuple):
    """One partition: its leader (None when it has none: then it is not available), replicas,
    in-sync replicas and offline replicas."""

    topic: str
    partition: int
    leader: Optional[Node]
    replicas: Tuple[Node, ...] = ()
    in_sync_replicas: Tuple[Node, ...] = ()
    offline_replicas: Tuple[Node, ...] = ()

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def __str__(self) -> str:
        def ids(nodes: Sequence[Node]) -> str:
            return "[" + ",".join(str(n.id) for n in nodes) + "]"

        leader = "none" if self.leader is None else str(self.leader.id)
        return (
            f"Partition(topic = {self.topic}, partition = {self.partition}, leader = {leader}, "
            f"replicas = {ids(self.replicas)}, isr = {ids(self.in_sync_replicas)}, "
            f"offlineReplicas = {ids(self.offline_replicas)})"
        )


def _topic_set(name: str, topics: Iterable[str]) -> FrozenSet[str]:
    if isinstance(topics, str):
        raise TypeError(f"{name} must be a collection of topic names, got a str: {topics!r}")
    result = frozenset(topics)
    for t in result:
        if not isinstance(t, str):
            raise TypeError(f"{name} must hold topic names (str), got {type(t).__name__}: {t!r}")
    return result


class Cluster:
    """Nodes and partitions, with the lookups by topic, by partition and by leader precomputed."""

    __slots__ = (
        "_nodes",
        "_nodes_by_id",
        "_by_tp",
        "_by_topic",
        "_available_by_topic",
        "_by_node",
        "_unauthorized_topics",
        "_invalid_topics",
        "_internal_topics",
        "_controller",
        "_cluster_id",
        "_is_bootstrap_configured",
        "_leader_epochs",
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
        leader_epochs: Optional[Mapping[Tuple[str, int], int]] = None,
    ) -> None:
        self._nodes: Tuple[Node, ...] = tuple(nodes)
        for n in self._nodes:
            if not isinstance(n, Node):
                raise TypeError(f"nodes must hold Node objects, got {type(n).__name__}: {n!r}")
        if controller is not None and not isinstance(controller, Node):
            raise TypeError(f"controller must be a Node or None, got {type(controller).__name__}")
        if cluster_id is not None and not isinstance(cluster_id, str):
            raise TypeError(f"cluster_id must be a str or None, got {type(cluster_id).__name__}")
        self._nodes_by_id: Dict[int, Node] = {n.id: n for n in self._nodes}
        by_tp: Dict[Tuple[str, int], PartitionInfo] = {}
        for p in partitions:
            if not isinstance(p, PartitionInfo):
                raise TypeError(
                    f"partitions must hold PartitionInfo objects, got {type(p).__name__}: {p!r}"
                )
            if p.leader is not None and not isinstance(p.leader, Node):
                raise TypeError(
                    f"the leader of {p.topic}-{p.partition} must be a Node or None, got "
                    f"{type(p.leader).__name__}"
                )
            by_tp[TopicPartition(p.topic, p.partition)] = p  # a later duplicate wins
        self._by_tp = by_tp
        by_topic: Dict[str, List[PartitionInfo]] = {}
        by_node: Dict[int, List[PartitionInfo]] = {}
        for p in by_tp.values():
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
            n: tuple(sorted(ps, key=lambda p: (p.topic, p.partition))) for n, ps in by_node.items()
        }
        self._unauthorized_topics = _topic_set("unauthorized_topics", unauthorized_topics)
        self._invalid_topics = _topic_set("invalid_topics", invalid_topics)
        self._internal_topics = _topic_set("internal_topics", internal_topics)
        self._controller = controller
        self._cluster_id = cluster_id
        self._is_bootstrap_configured = bool(is_bootstrap_configured)
        # the partitions' leader epochs (Java keeps them in MetadataSnapshot): a batch waiting to
        # be retried goes at once when its partition's epoch rose since it was sent (KIP-951)
        self._leader_epochs: Dict[Tuple[str, int], int] = {
            TopicPartition(*tp): int(e) for tp, e in (leader_epochs or {}).items() if e >= 0
        }

    # -- constructors ---------------------------------------------------------------------------

    @classmethod
    def empty(cls) -> Cluster:
        return cls((), ())

    @classmethod
    def bootstrap(cls, addresses: Iterable[Tuple[str, int]]) -> Cluster:
        """Nodes for the bootstrap servers, with ids -1, -2, ... as Java does; no partitions."""
        nodes = []
        for i, address in enumerate(addresses):
            try:
                host, port = address
            except (TypeError, ValueError):
                raise TypeError(
                    f"bootstrap addresses must be (host, port) pairs, got {address!r}"
                ) from None
            if not isinstance(host, str) or not isinstance(port, int) or isinstance(port, bool):
                raise TypeError(
                    f"bootstrap addresses must be (host: str, port: int) pairs, got {address!r}"
                )
            nodes.append(Node(-(i + 1), host, port))
        return cls(nodes, (), is_bootstrap_configured=True)

    def with_partitions(
        self, partitions: Union[Iterable[PartitionInfo], Mapping[Any, PartitionInfo]]
    ) -> Cluster:
        """A copy with ``partitions`` added (replacing those with the same topic and partition).
        Accepts PartitionInfo objects, or a mapping to them (Java's Map<TopicPartition, ...>)."""
        merged = dict(self._by_tp)
        values = partitions.values() if isinstance(partitions, Mapping) else partitions
        for p in values:
            if not isinstance(p, PartitionInfo):
                raise TypeError(
                    f"partitions must hold PartitionInfo objects, got {type(p).__name__}: {p!r}"
                )
            merged[TopicPartition(p.topic, p.partition)] = p
        return Cluster(
            self._nodes,
            merged.values(),
            self._unauthorized_topics,
            self._invalid_topics,
            self._internal_topics,
            self._controller,
            self._cluster_id,
            leader_epochs=self._leader_epochs,
        )

    # -- read-only attributes ---------------------------------------------------------------------

    @property
    def nodes(self) -> List[Node]:
        """The brokers (a fresh list)."""
        return list(self._nodes)

    @property
    def topics(self) -> FrozenSet[str]:
        """The topics with at least one partition in this view."""
        return frozenset(self._by_topic)

    @property
    def unauthorized_topics(self) -> FrozenSet[str]:
        return self._unauthorized_topics

    @property
    def invalid_topics(self) -> FrozenSet[str]:
        return self._invalid_topics

    @property
    def internal_topics(self) -> FrozenSet[str]:
        return self._internal_topics

    @property
    def controller(self) -> Optional[Node]:
        return self._controller

    @property
    def cluster_id(self) -> Optional[str]:
        return self._cluster_id

    @property
    def is_bootstrap_configured(self) -> bool:
        """True for the view made from the bootstrap addresses alone."""
        return self._is_bootstrap_configured

    # -- lookups --------------------------------------------------------------------------------

    def node_by_id(self, node_id: int) -> Optional[Node]:
        return self._nodes_by_id.get(node_id)

    def leader_for(self, tp: Tuple[str, int]) -> Optional[Node]:
        """The leader of a TopicPartition (or a plain ``(topic, partition)`` tuple), or None."""
        p = self._by_tp.get(tp)
        return None if p is None else p.leader

    def partition(self, tp: Tuple[str, int]) -> Optional[PartitionInfo]:
        return self._by_tp.get(tp)

    def leader_epoch_for(self, tp: Tuple[str, int]) -> int:
        """The epoch of the partition's leader, or -1 when unknown (Java's leaderEpochFor)."""
        return self._leader_epochs.get(tp, -1)

    def leader_epochs(self) -> Mapping[Tuple[str, int], int]:
        """The known leader epochs by partition (``leader_epoch_for`` of each; read-only).
        The accumulator's drain reads the epoch of every batch it drains: a dict lookup in C
        for each, instead of a Python call."""
        return self._leader_epochs

    def partitions_for_topic(self, topic: str) -> Tuple[PartitionInfo, ...]:
        """The topic's partitions sorted by partition id (empty when the topic is unknown)."""
        return self._by_topic.get(topic, ())

    def available_partitions_for_topic(self, topic: str) -> Tuple[PartitionInfo, ...]:
        """The topic's partitions that have a leader, sorted by partition id."""
        return self._available_by_topic.get(topic, ())

    def partitions_for_node(self, node_id: int) -> Tuple[PartitionInfo, ...]:
        """The partitions this node leads, sorted by topic and partition."""
        return self._by_node.get(node_id, ())

    def partition_count_for_topic(self, topic: str) -> Optional[int]:
        """The number of partitions of the topic, or None when the topic is unknown."""
        ps = self._by_topic.get(topic)
        return None if ps is None else len(ps)

    def __repr__(self) -> str:
        return (
            f"Cluster(id={self._cluster_id}, nodes={list(self._nodes)}, "
            f"partitions={len(self._by_tp)}, controller={self._controller})"
        )
