"""Kafka protocol primitive types: a growable Writer and a bounds-checked Reader (in C:
``writer.pyx``, ``reader.pyx``).

Non-flexible versions use int16/int32 length prefixes; flexible ("compact") versions use an
unsigned varint of length + 1 (0 = null) and end each struct with a tagged-fields section.
"""

from __future__ import annotations

from typing import Dict, Tuple

from cproducer.protocol.reader import Reader
from cproducer.protocol.writer import Writer

__all__ = [
    "Reader",
    "Writer",
    "read_throttle_and_error",
    "read_throttle_and_partition_errors",
]


def read_throttle_and_error(data: memoryview, flex: bool) -> Tuple[int, int]:
    """A whole answer body ``throttle_time_ms int32, error_code int16`` (+ tagged fields)."""
    r = Reader(data)
    out = (r.int32(), r.int16())
    if flex:
        r.tagged_fields()
    return out


def read_throttle_and_partition_errors(
    data: memoryview, flex: bool
) -> Tuple[int, Dict[Tuple[str, int], int]]:
    """A whole answer body ``throttle_time_ms int32, [name string, [partition_index int32,
    error_code int16]]`` (+ tagged fields) as ``(throttle, {(topic, partition): error code})``."""
    r = Reader(data)
    throttle = r.int32()
    out: Dict[Tuple[str, int], int] = {}
    for _ in range(r.array_length(flex)):
        topic = r.string(compact=flex) or ""
        for _ in range(r.array_length(flex)):
            partition = r.int32()
            out[(topic, partition)] = r.int16()
            if flex:
                r.tagged_fields()
        if flex:
            r.tagged_fields()
    if flex:
        r.tagged_fields()
    return throttle, out
