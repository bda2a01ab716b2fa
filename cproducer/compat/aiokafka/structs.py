"""The records aiokafka's producer API hands out, with aiokafka's fields.

``TopicPartition`` is the engine's (a ``(topic, partition)`` named tuple, equal to aiokafka's);
``RecordMetadata`` is what an awaited ``send`` gives, field for field aiokafka's;
``OffsetAndMetadata`` is a value of ``send_offsets_to_transaction``'s mapping.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from cproducer.cluster import TopicPartition

__all__ = ["OffsetAndMetadata", "RecordMetadata", "TopicPartition"]


class RecordMetadata(NamedTuple):
    """Where a record (or, from ``send_batch``, a batch's first record) landed."""

    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    #: the record's timestamp (ms): the one it was sent with, or the broker's log append time
    timestamp: Optional[int]
    #: 0: CreateTime (the engine does not tell a log append time apart; see the README)
    timestamp_type: int
    #: not reported by the engine: None
    log_start_offset: Optional[int]


class OffsetAndMetadata(NamedTuple):
    offset: int
    metadata: str
