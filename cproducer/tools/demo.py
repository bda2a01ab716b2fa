"""``python -m cproducer.demo``: build a RecordBatch v2 with every available codec, read it back.

Each batch is read back twice: by the record reader (the one that splits a batch too large for
the broker) and, when kafka-python is installed, by its ``DefaultRecordBatch`` decoder, which
also checks the CRC-32C.
"""

from __future__ import annotations

import time
from typing import Any, List, Optional, Tuple

from cproducer.record import compression
from cproducer.record.record_batch_builder import RecordBatchBuilder
from cproducer.record.record_batch_reader import read_records

Record = Tuple[int, Optional[bytes], Optional[bytes], List[Tuple[str, Optional[bytes]]]]


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
        ours = "same" if read_records(builder) == records else "DIFFERENT"
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
