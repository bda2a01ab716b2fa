"""asv: RecordBatchBuilder (issue: records).

Appends: a 10-byte key and a 100-byte value, no headers unless named, into an open batch; each
timed call appends RECORDS records to a fresh builder over a reused 16 MiB buffer (the builder's
creation is ~1/10000 of the call). ``track_*_ns_per_record`` report the per-record figure
directly (best of 5 timeit runs); the C-level append path of send_many is
measured in bench_producer. Closing: a full batch.size (16 KiB) batch and a 1 MiB one per
codec (compression + header + CRC).
"""

import timeit

from cproducer.record import compression
from cproducer.record.record_batch_builder import RecordBatchBuilder

RECORDS = 10_000
KEY = b"k" * 10
VALUE = b"v" * 100
TS = 1_700_000_000_000
HEADERS = [("trace-id", b"0123456789abcdef"), ("source", b"bench")]


def _try_append(buf, headers=None):
    b = RecordBatchBuilder(buf)
    append = b.try_append
    for _ in range(RECORDS):
        append(TS, KEY, VALUE, headers)


def _ns_per_record(fn, *args):
    t = min(timeit.repeat(lambda: fn(*args), number=20, repeat=5)) / 20
    return t / RECORDS * 1e9


class Append:
    def setup(self):
        self.buf = bytearray(16 << 20)
        _try_append(self.buf)  # page the buffer in

    def time_try_append_10k(self):
        _try_append(self.buf)

    def time_try_append_with_2_headers_10k(self):
        _try_append(self.buf, HEADERS)

    def track_try_append_ns_per_record(self):
        return _ns_per_record(_try_append, self.buf)

    track_try_append_ns_per_record.unit = "ns/record"  # type: ignore[attr-defined]


class Close:
    """Fill a builder of ``size`` bytes with appends, then close it (compress + header + CRC)."""

    params = (["none", "gzip", "snappy", "lz4", "zstd"], [16384, 1 << 20])
    param_names = ["codec", "batch_size"]

    def setup(self, codec, size):
        self.codec = compression.codec_id(codec)
        compression.check_available(self.codec)
        self.size = size
        # somewhat compressible values: a counter inside repeated text
        self.values = [b"record %08d " % i + b"payload text " * 7 for i in range(20_000)]

    def _filled(self):
        b = RecordBatchBuilder(bytearray(self.size), self.codec, self.size, 1, 0, 0, False)
        append = b.try_append
        for v in self.values:
            if append(TS, KEY, v, None) < 0:
                break
        return b

    def time_fill_and_close(self, codec, size):
        self._filled().close()

    def time_fill(self, codec, size):
        self._filled()

    def time_close_then_set_producer_state(self, codec, size):
        b = self._filled()
        b.close()
        b.set_producer_state(2, 1, 100, False)  # header + CRC rewritten in place

    def track_compressed_size(self, codec, size):
        b = self._filled()
        b.close()
        return b.size_in_bytes

    track_compressed_size.unit = "bytes"  # type: ignore[attr-defined]
