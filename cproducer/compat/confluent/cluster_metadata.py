"""``list_topics()``'s answer: confluent-kafka's ``ClusterMetadata`` and its parts, built from
cproducer's ``Cluster`` view."""

from __future__ import annotations

from typing import Any, Dict, List, Optional


class BrokerMetadata:
    def __init__(self, id: int = -1, host: Optional[str] = None, port: int = -1) -> None:
        self.id = id
        self.host = host
        self.port = port

    def __repr__(self) -> str:
        return f"BrokerMetadata({self.id}, {self.host}:{self.port})"

    def __str__(self) -> str:
        return f"{self.host}:{self.port}/{self.id}"


class PartitionMetadata:
    def __init__(self) -> None:
        self.id = -1
        self.leader = -1
        self.replicas: List[int] = []
        self.isrs: List[int] = []
        self.error: Any = None

    def __repr__(self) -> str:
        if self.error is not None:
            return f"PartitionMetadata({self.id}, {self.error})"
        return f"PartitionMetadata({self.id})"

    def __str__(self) -> str:
        return str(self.id)


class TopicMetadata:
    def __init__(self) -> None:
        self.topic: Optional[str] = None
        self.partitions: Dict[int, PartitionMetadata] = {}
        self.error: Any = None

    def __repr__(self) -> str:
        if self.error is not None:
            return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions, {self.error})"
        return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions)"

    def __str__(self) -> str:
        return str(self.topic)


class ClusterMetadata:
    def __init__(self) -> None:
        self.cluster_id: Optional[str] = None
        self.controller_id = -1
        self.brokers: Dict[int, BrokerMetadata] = {}
        self.topics: Dict[str, TopicMetadata] = {}
        self.orig_broker_id = -1
        self.orig_broker_name: Optional[str] = None

    def __repr__(self) -> str:
        return f"ClusterMetadata({self.cluster_id})"

    def __str__(self) -> str:
        return str(self.cluster_id)


def cluster_metadata(cluster: Any, only_topic: Optional[str] = None) -> ClusterMetadata:
    """``cluster`` (cproducer's ``Cluster``) as confluent-kafka's ``ClusterMetadata``; with
    ``only_topic``, that topic alone."""
    md = ClusterMetadata()
    md.cluster_id = cluster.cluster_id
    controller = cluster.controller
    md.controller_id = -1 if controller is None else controller.id
    for node in cluster.nodes:
        md.brokers[node.id] = BrokerMetadata(node.id, node.host, node.port)
    topics = [only_topic] if only_topic is not None else sorted(cluster.topics)
    for name in topics:
        tm = TopicMetadata()
        tm.topic = name
        for info in cluster.partitions_for_topic(name):
            pm = PartitionMetadata()
            pm.id = info.partition
            pm.leader = -1 if info.leader is None else info.leader.id
            pm.replicas = [n.id for n in info.replicas]
            pm.isrs = [n.id for n in info.in_sync_replicas]
            tm.partitions[pm.id] = pm
        md.topics[name] = tm
    return md
