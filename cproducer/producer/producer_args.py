"""The checks of what a caller hands to ``KafkaProducer``: topics, headers, serialized keys and
values, and the offsets and group of ``send_offsets_to_transaction``.

Each raises the error ``send()`` (or the transaction call) documents, before anything is
accepted; the producer itself only wires the results into the engine.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Mapping, Optional, Tuple

from cproducer import errors
from cproducer.cluster import TopicPartition
from cproducer.producer.internals.transaction_manager import ConsumerGroupMetadata

_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]+")
_MAX_TOPIC_LENGTH = 249
BYTES_TYPES = (bytes, bytearray, memoryview)


def check_topic(topic: Any) -> None:
    """A topic name Kafka takes (Java's ``Topic.validate``), else ``InvalidTopicError``
    (``TypeError`` for a topic that is not a str)."""
    if not isinstance(topic, str):
        # a wrong type is a programming error, as kafka-python and confluent-kafka raise it
        raise TypeError(f"topic must be a str, got {type(topic).__name__}")
    if not topic:
        raise errors.InvalidTopicError("topic must not be empty")
    if topic in (".", ".."):
        raise errors.InvalidTopicError(f"topic cannot be {topic!r}")
    if len(topic) > _MAX_TOPIC_LENGTH:
        raise errors.InvalidTopicError(
            f"topic is {len(topic)} characters long; the maximum is {_MAX_TOPIC_LENGTH}"
        )
    if not _TOPIC_RE.fullmatch(topic):
        raise errors.InvalidTopicError(
            f"topic {topic!r} has characters Kafka does not allow: only ASCII letters, digits, "
            "'.', '_' and '-'"
        )


def check_headers(headers: Any) -> None:
    """A list of (str, bytes or None) pairs, else ``SerializationError``."""
    if not isinstance(headers, (list, tuple)):
        raise errors.SerializationError(
            f"headers must be a list of (str, bytes or None) pairs, got {type(headers).__name__}"
        )
    for i, header in enumerate(headers):
        if not isinstance(header, tuple) or len(header) != 2:
            raise errors.SerializationError(
                f"headers[{i}] must be a (str, bytes or None) pair, got {header!r:.60}"
            )
        hkey, hvalue = header
        if not isinstance(hkey, str):
            raise errors.SerializationError(
                f"headers[{i}] key must be str, got {type(hkey).__name__}"
            )
        if hvalue is not None and not isinstance(hvalue, BYTES_TYPES):
            raise errors.SerializationError(
                f"headers[{i}] value must be bytes or None, got {type(hvalue).__name__}"
            )


def check_partition_type(partition: Any) -> None:
    """An explicit partition is an int (a bool is not), else ``InvalidPartitionError``."""
    if isinstance(partition, bool) or not isinstance(partition, int):
        raise errors.InvalidPartitionError(
            f"partition must be an int, got {type(partition).__name__}"
        )


def check_timestamp_type(timestamp_ms: Any) -> None:
    """An explicit timestamp is an integer of ms since the epoch (an int, a numpy integer; a
    float or bool is not: it would be cut to whole ms without a word), else ``TypeError`` as
    kafka-python's record builder raises."""
    if isinstance(timestamp_ms, bool) or not hasattr(type(timestamp_ms), "__index__"):
        raise TypeError(
            f"timestamp_ms must be an int (ms since the epoch) or None, got "
            f"{type(timestamp_ms).__name__}"
        )


def serialize(what: str, serializer: Any, topic: str, headers: Any, obj: Any) -> Any:
    """``obj`` through ``serializer`` (kafka-python's ``(topic, headers, obj)`` form), or as it
    is without one; the result must be bytes-like or None, else ``SerializationError``."""
    if serializer is not None:
        try:
            obj = serializer(topic, headers, obj)
        except Exception as exc:
            raise errors.SerializationError(
                f"the {what} serializer failed on {type(obj).__name__}: {exc}"
            ) from exc
        if obj is not None and not isinstance(obj, BYTES_TYPES):
            raise errors.SerializationError(
                f"the {what} serializer returned {type(obj).__name__}, expected bytes"
            )
        return obj
    if obj is None or isinstance(obj, BYTES_TYPES):
        return obj
    raise errors.SerializationError(
        f"{what} must be bytes, bytearray, memoryview or None without a {what}_serializer; "
        f"got {type(obj).__name__}"
    )


def group_metadata(value: Any) -> ConsumerGroupMetadata:
    """``send_offsets_to_transaction``'s group: an id, a ``ConsumerGroupMetadata``, or an object
    with ``group_id`` (and Java's generation, member and instance ids)."""
    if isinstance(value, ConsumerGroupMetadata):
        return value
    if isinstance(value, str):
        if not value:
            raise ValueError("consumer_group_metadata: the group id is empty")
        return ConsumerGroupMetadata(value)
    group_id = getattr(value, "group_id", None)
    if isinstance(group_id, str) and group_id:
        return ConsumerGroupMetadata(
            group_id,
            int(getattr(value, "generation_id", -1)),
            str(getattr(value, "member_id", "") or ""),
            getattr(value, "group_instance_id", None),
        )
    raise TypeError(
        "consumer_group_metadata must be a group id (str) or a ConsumerGroupMetadata, got "
        f"{type(value).__name__} (confluent-kafka's serialized metadata is opaque: pass the "
        "group id)"
    )


def transaction_offsets(value: Any) -> Dict[TopicPartition, Tuple[int, int, Optional[str]]]:
    """offsets of send_offsets_to_transaction -> {tp: (offset, leader_epoch, metadata)}."""
    out: Dict[TopicPartition, Tuple[int, int, Optional[str]]] = {}
    if isinstance(value, Mapping):
        items = list(value.items())
    else:
        try:
            items = [((o.topic, o.partition), o) for o in value]
        except (TypeError, AttributeError):
            raise TypeError(
                "offsets must be a mapping {TopicPartition or (topic, partition): offset} or "
                f"an iterable of objects with .topic/.partition/.offset, got {type(value).__name__}"
            ) from None
    for key, v in items:
        try:
            topic, partition = key
        except (TypeError, ValueError):
            raise TypeError(f"offsets: key {key!r} is not a (topic, partition)") from None
        metadata: Optional[str] = None
        leader_epoch = -1
        if hasattr(v, "offset"):
            # an OffsetAndMetadata: kafka-python's (offset, metadata, leader_epoch) namedtuple,
            # Java's, confluent-kafka's TopicPartition
            offset = v.offset
            metadata = getattr(v, "metadata", None)
            epoch = getattr(v, "leader_epoch", None)
            leader_epoch = -1 if epoch is None else int(epoch)
        elif isinstance(v, tuple) and len(v) == 2:
            offset, metadata = v
        else:
            offset = v
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(
                f"offsets: the offset of {topic}[{partition}] must be an int >= 0, got {offset!r}"
            )
        if not isinstance(topic, str) or not isinstance(partition, int) or partition < 0:
            raise TypeError(f"offsets: {key!r} is not a (topic: str, partition: int >= 0)")
        out[TopicPartition(topic, partition)] = (offset, leader_epoch, metadata)
    return out
