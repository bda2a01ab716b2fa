"""aiokafka's ``BatchBuilder``: records gathered by the caller, then sent as one ``send_batch``.

aiokafka writes the records into a RecordBatch v2 buffer of at most ``max_batch_size`` bytes as
they are appended; ``append`` answers ``None`` once the next record would not fit (the first
record always fits). Here the records are kept as columns (values, keys, timestamps, headers) and
``send_batch`` hands them to the engine's ``send_many`` in one call, so the bytes are written once,
by the engine's C loop. The sizes (``append``'s metadata, ``size()``) and the full rule are those
of aiokafka's C builder (the one its users run), computed from the record layout: each record is
its length (varint), then attributes, timestamp delta, offset delta, key, value and headers, the
numbers as zigzag varints; the batch header is 61 bytes.
"""

from __future__ import annotations

import time
from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple

BATCH_HEADER_SIZE = 61
_BYTES_TYPES = (bytes, bytearray, memoryview)


def varint_size(value: int) -> int:
    """Bytes of ``value`` as a zigzag varint (Kafka's varint/varlong)."""
    v = (value << 1) ^ (value >> 63)
    size = 1
    while v >= 0x80:
        v >>= 7
        size += 1
    return size


def _bytes_size(data: Any) -> int:
    return 1 if data is None else varint_size(len(data)) + len(data)


class BatchRecordMetadata(NamedTuple):
    """What ``BatchBuilder.append`` answers: the record's offset in the batch, its size in bytes
    and its timestamp (ms)."""

    offset: int
    size: int
    timestamp: int

    @property
    def crc(self) -> None:
        return None  # RecordBatch v2 has one CRC per batch, none per record


class BatchBuilder:
    """Records for one ``send_batch`` call (make it with ``producer.create_batch()``)."""

    def __init__(
        self,
        batch_size: int,
        *,
        key_serializer: Optional[Callable[[Any], Any]] = None,
        value_serializer: Optional[Callable[[Any], Any]] = None,
    ) -> None:
        self._batch_size = batch_size
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self.keys: List[Any] = []
        self.values: List[Any] = []
        self.timestamps: List[int] = []
        self.headers: List[Optional[List[Tuple[str, Any]]]] = []
        self.has_headers = False
        self._size = BATCH_HEADER_SIZE
        self._first_timestamp: Optional[int] = None
        self._closed = False

    def append(
        self, *, timestamp: Optional[int], key: Any, value: Any, headers: Sequence[Any] = ()
    ) -> Optional[BatchRecordMetadata]:
        """Add a record; its metadata, or None when the batch is full or closed (a full batch
        closes itself). ``timestamp``: ms since the epoch, None for now."""
        if self._closed:
            return None
        if self._key_serializer is not None:
            key = self._key_serializer(key)
        if self._value_serializer is not None:
            value = self._value_serializer(value)
        if timestamp is None:
            timestamp = int(time.time() * 1000)
        elif type(timestamp) is not int:
            if not isinstance(timestamp, (int, float)):
                raise TypeError(f"timestamp must be ms since the epoch (int), got {timestamp!r}")
            timestamp = int(timestamp)
        if not (key is None or type(key) in _BYTES_TYPES):
            raise TypeError(f"Not supported type for key: {type(key)}")
        if not (value is None or type(value) in _BYTES_TYPES):
            raise TypeError(f"Not supported type for value: {type(value)}")
        offset = len(self.values)
        first = self._first_timestamp
        body = (
            1  # attributes
            + varint_size(0 if first is None else timestamp - first)
            + varint_size(offset)
            + _bytes_size(key)
            + _bytes_size(value)
            + varint_size(len(headers))
        )
        header_list = None
        if headers:
            header_list = []
            for h_key, h_value in headers:
                body += _bytes_size(h_key.encode("utf-8")) + _bytes_size(h_value)
                header_list.append((h_key, h_value))
        size = varint_size(body) + body
        # full when the record would reach the limit (aiokafka's C builder: >=, not >)
        if first is not None and self._size + size >= self._batch_size:
            self._closed = True
            return None
        if first is None:
            self._first_timestamp = timestamp
        self._size += size
        self.keys.append(key)
        self.values.append(value)
        self.timestamps.append(timestamp)
        self.headers.append(header_list)
        if header_list is not None:
            self.has_headers = True
        return BatchRecordMetadata(offset, size, timestamp)

    def close(self) -> None:
        """No more records (also done by ``send_batch``); a closed batch does not reopen."""
        self._closed = True

    def size(self) -> int:
        """The batch's size in bytes, uncompressed."""
        return self._size

    def record_count(self) -> int:
        return len(self.values)

    def closed(self) -> bool:
        return self._closed
