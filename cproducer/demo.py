"""``python -m cproducer.demo``: build a RecordBatch v2 with every available codec, read it back.

Each batch is checked twice: by a minimal walk here (CRC-32C, ``compression.decompress``, the
record layout) and, when kafka-python is installed, by its ``DefaultRecordBatch`` decoder.
"""

from __future__ import annotations

import struct
import time
from typing import Any, List, Optional, Tuple

from cproducer.record import compression
from cproducer.record.record_batch_builder import RecordBatchBuilder
from cproducer.utils.crc32c import crc32c

Record = Tuple[int, Optional[bytes], Optional[bytes], List[Tuple[str, Optional[bytes]]]]


def _varint(buf: bytes, pos: int) -> Tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _nullable(buf: bytes, pos: int) -> Tuple[Optional[bytes], int]:
    n, pos = _varint(buf, pos)
    return (None, pos) if n < 0 else (buf[pos : pos + n], pos + n)


def walk(batch: bytes) -> List[Record]:
    """Decode a RecordBatch v2: header checks, CRC-32C, decompression, records."""
    (length, _epoch, magic, crc, attributes) = struct.unpack_from(">iibIh", batch, 8)
    assert magic == 2 and length == len(batch) - 12, "not a whole v2 batch"
    assert crc32c(batch[21:]) == crc, "CRC-32C mismatch"
    base_ts = struct.unpack_from(">q", batch, 27)[0]
    count = struct.unpack_from(">i", batch, 57)[0]
    body = batch[61:]
    if attributes & 0x07:
        body = compression.decompress(attributes & 0x07, body)
    out: List[Record] = []
    pos = 0
    for _ in range(count):
        size, pos = _varint(body, pos)
        end = pos + size
        ts_delta, pos = _varint(body, pos + 1)  # after the attributes byte
        _offset_delta, pos = _varint(body, pos)
        key, pos = _nullable(body, pos)
        value, pos = _nullable(body, pos)
        n_headers, pos = _varint(body, pos)
        headers = []
        for _h in range(n_headers):
            hkey, pos = _nullable(body, pos)
            hvalue, pos = _nullable(body, pos)
            headers.append(((hkey or b"").decode(), hvalue))
        assert pos == end, "record length mismatch"
        out.append((base_ts + ts_delta, key, value, headers))
    assert pos == len(body), "bytes left after the last record"
    return out


def _kafka_python(batch: bytes) -> Optional[List[Any]]:
    try:
        from kafka.record.default_records import DefaultRecordBatch
    except ImportError:
        return None
    decoded = DefaultRecordBatch(batch)
    assert decoded.validate_crc()
    return [(r.timestamp, r.key, r.value, r.headers) for r in decoded]


def main() -> None:
    now = int(time.time() * 1000)
    records: List[Record] = [
        (now + i, b"key-%d" % (i % 10), b"value-%d " % i * 10, [("n", b"%d" % i)])
        for i in range(500)
    ]
    for codec, name in compression.NAMES.items():
        try:
            compression.check_available(codec)
        except ImportError as exc:
            print(f"{name:>6}: skipped ({exc})")
            continue
        builder = RecordBatchBuilder(bytearray(1 << 20), codec)
        for ts, key, value, headers in records:
            builder.try_append(ts, key, value, headers)
        builder.close()
        batch = bytes(builder.buffer())
        ours = "same" if walk(batch) == records else "DIFFERENT"
        theirs = _kafka_python(batch)
        peer = (
            "kafka-python not installed"
            if theirs is None
            else f"kafka-python: {'same' if theirs == records else 'DIFFERENT'}"
        )
        print(
            f"{name:>6}: {builder.num_records} records, {len(batch):>6} bytes "
            f"(uncompressed {builder.uncompressed_size}); read back: {ours}; {peer}"
        )


if __name__ == "__main__":
    main()
