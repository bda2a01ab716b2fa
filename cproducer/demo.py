"""``python -m cproducer.demo``: build a RecordBatch v2 with every codec and decode it back."""

from __future__ import annotations

import time

from cproducer import compression
from cproducer._records import RecordBatchBuilder


def main() -> None:
    now = int(time.time() * 1000)
    records = [
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
        try:
            from kafka.record.default_records import DefaultRecordBatch

            decoded = list(DefaultRecordBatch(batch))
            ok = [(r.timestamp, r.key, r.value, r.headers) for r in decoded] == records
            check = f"kafka-python decodes {len(decoded)} records: {'same' if ok else 'DIFFERENT'}"
        except ImportError:
            check = "kafka-python not installed: not decoded"
        print(
            f"{name:>6}: {builder.num_records} records, {len(batch):>7} bytes "
            f"(uncompressed {builder.uncompressed_size}); {check}"
        )


if __name__ == "__main__":
    main()
