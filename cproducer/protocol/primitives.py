"""Kafka protocol primitive types: a growable Writer and a bounds-checked Reader (in C:
``reader.pyx``).

Non-flexible versions use int16/int32 length prefixes; flexible ("compact") versions use an
unsigned varint of length + 1 (0 = null) and end each struct with a tagged-fields section.
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from cproducer.protocol.reader import Reader

__all__ = [
    "Reader",
    "Writer",
    "read_throttle_and_error",
    "read_throttle_and_partition_errors",
]

T = TypeVar("T")

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")


class Writer:
    """A growable byte buffer with typed writes (asyncpg's WriteBuffer idea)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def int8(self, v: int) -> Writer:
        self.buf += _I8.pack(v)
        return self

    def boolean(self, v: bool) -> Writer:
        self.buf.append(1 if v else 0)
        return self

    def int16(self, v: int) -> Writer:
        self.buf += _I16.pack(v)
        return self

    def int32(self, v: int) -> Writer:
        self.buf += _I32.pack(v)
        return self

    def uint32(self, v: int) -> Writer:
        self.buf += _U32.pack(v)
        return self

    def int64(self, v: int) -> Writer:
        self.buf += _I64.pack(v)
        return self

    def uvarint(self, v: int) -> Writer:
        if v < 0:
            raise ValueError("unsigned varint must be >= 0")
        while v >= 0x80:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)
        return self

    def varint(self, v: int) -> Writer:
        return self.uvarint((v << 1) ^ (v >> 63) if v < 0 else v << 1)

    def raw(self, data: Any) -> Writer:
        self.buf += data
        return self

    def string(self, s: Optional[str], compact: bool = False, nullable: bool = False) -> Writer:
        if s is None:
            if not nullable:
                raise ValueError("a non-nullable string is None")
            return self.uvarint(0) if compact else self.int16(-1)
        data = s.encode("utf-8")
        if compact:
            self.uvarint(len(data) + 1)
        else:
            self.int16(len(data))
        self.buf += data
        return self

    def bytes_(self, data: Any, compact: bool = False) -> Writer:
        if data is None:
            return self.uvarint(0) if compact else self.int32(-1)
        n = memoryview(data).nbytes
        if compact:
            self.uvarint(n + 1)
        else:
            self.int32(n)
        self.buf += data
        return self

    def bytes_length(self, n: Optional[int], compact: bool = False) -> Writer:
        """Only the length prefix of a bytes field (its content goes out as a separate part)."""
        if n is None:
            return self.uvarint(0) if compact else self.int32(-1)
        return self.uvarint(n + 1) if compact else self.int32(n)

    def array_length(self, n: Optional[int], compact: bool = False) -> Writer:
        if n is None:
            return self.uvarint(0) if compact else self.int32(-1)
        return self.uvarint(n + 1) if compact else self.int32(n)

    def array(
        self, items: Optional[List[T]], write: Callable[[Writer, T], Any], compact: bool = False
    ) -> Writer:
        self.array_length(None if items is None else len(items), compact)
        for item in items or ():
            write(self, item)
        return self

    def tagged_fields(self) -> Writer:
        return self.uvarint(0)

    def uuid(self, value: Optional[bytes]) -> Writer:
        self.buf += value if value is not None else bytes(16)
        return self

    def getvalue(self) -> bytes:
        return bytes(self.buf)


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
