"""A confluent-kafka ``Consumer.consumer_group_metadata()`` read back for a transaction.

confluent-kafka hands out librdkafka's serialized consumer group metadata (``bytes``), layout v2
(``rd_kafka_consumer_group_metadata_write``)::

    b"CGMDv2:"  generation_id (int32, the writing host's byte order)  group_id NUL
    member_id NUL  group_instance_id_is_null (int8)  [group_instance_id NUL]

Strings are printable and NUL-terminated; the buffer ends right after the last field.
"""

from __future__ import annotations

import struct
from typing import Any, Optional, Tuple

from cproducer import ConsumerGroupMetadata
from cproducer.compat.confluent.error import BAD_MSG, KafkaError, KafkaException

_MAGIC = b"CGMDv2:"
# librdkafka copies the int32 in its host's order; confluent-kafka wheels are built for
# little-endian hosts only, and the bytes are only ever read back on the same host
_GENERATION = struct.Struct("=i")


def _bad(reason: str) -> KafkaException:
    return KafkaException(KafkaError(BAD_MSG, f"consumer group metadata: {reason}"))


def _printable(buf: bytes, start: int, what: str) -> Tuple[str, int]:
    end = buf.find(b"\0", start)
    if end < 0:
        raise _bad(f"{what} is not NUL-terminated")
    raw = buf[start:end]
    if any(c < 0x20 or c > 0x7E for c in raw):
        raise _bad(f"{what} is not printable")
    return raw.decode("ascii"), end + 1


def read_group_metadata(value: Any) -> ConsumerGroupMetadata:
    """The group whose offsets a transaction commits: librdkafka's serialized form (what
    ``confluent_kafka.Consumer.consumer_group_metadata()`` returns), a ``ConsumerGroupMetadata``,
    or a group id."""
    if isinstance(value, ConsumerGroupMetadata):
        return value
    if isinstance(value, str):
        if not value:
            raise _bad("the group id is empty")
        return ConsumerGroupMetadata(value)
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(
            "group_metadata must be a consumer's consumer_group_metadata() (bytes), a "
            f"ConsumerGroupMetadata or a group id, got {type(value).__name__}"
        )
    buf = bytes(value)
    if len(buf) < len(_MAGIC) + _GENERATION.size + 3:
        raise _bad("input buffer is too short")
    if not buf.startswith(_MAGIC):
        raise _bad("input buffer is not a serialized consumer group metadata object")
    (generation_id,) = _GENERATION.unpack_from(buf, len(_MAGIC))
    pos = len(_MAGIC) + _GENERATION.size
    group_id, pos = _printable(buf, pos, "group id")
    member_id, pos = _printable(buf, pos, "member id")
    if pos >= len(buf):
        raise _bad("input buffer bad length")
    instance_is_null = buf[pos]
    pos += 1
    group_instance_id: Optional[str] = None
    if not instance_is_null:
        group_instance_id, pos = _printable(buf, pos, "group instance id")
    if pos != len(buf):
        raise _bad("input buffer bad length")
    return ConsumerGroupMetadata(group_id, generation_id, member_id, group_instance_id)


def write_group_metadata(group: ConsumerGroupMetadata) -> bytes:
    """The serialized form of ``group`` (what librdkafka writes)."""
    out = bytearray(_MAGIC)
    out += _GENERATION.pack(group.generation_id)
    out += group.group_id.encode("ascii") + b"\0"
    out += group.member_id.encode("ascii") + b"\0"
    if group.group_instance_id is None:
        out += b"\x01"
    else:
        out += b"\x00" + group.group_instance_id.encode("ascii") + b"\0"
    return bytes(out)
