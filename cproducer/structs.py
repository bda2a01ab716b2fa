"""Small records that cross the API, by kafka-python's names (``from cproducer import
OffsetAndMetadata, TopicPartition`` where a program had ``from kafka import ...``)."""

from __future__ import annotations

from typing import NamedTuple, Optional

from cproducer.cluster import TopicPartition

__all__ = ["OffsetAndMetadata", "TopicPartition"]


class OffsetAndMetadata(NamedTuple):
    """A consumer offset to commit: the offset of the next record to read, an optional metadata
    string and the leader epoch of the record before it (-1: unknown). Field names, order and
    defaults are kafka-python's and Java's."""

    offset: int
    metadata: Optional[str] = ""
    leader_epoch: int = -1
