"""asv: CRC-32C, murmur2 and record appends (issue: core)."""

import os

import numpy as np

from cproducer.record.record_batch_builder import RecordBatchBuilder
from cproducer.utils.crc32c import HAVE_HW, crc32c_hw, crc32c_table
from cproducer.utils.murmur2 import partition_for_key, partitions_for_buffer, partitions_for_keys


class Crc32c:
    def setup(self):
        self.data = os.urandom(1 << 20)

    def time_hw_1mb(self):
        if HAVE_HW:
            crc32c_hw(self.data)

    def time_table_1mb(self):
        crc32c_table(self.data)

    def track_hw_gb_per_s(self):
        import timeit

        n = 200
        t = min(timeit.repeat(lambda: crc32c_hw(self.data), number=n, repeat=3)) / n
        return len(self.data) / t / 1e9

    track_hw_gb_per_s.unit = "GB/s"


class Murmur2:
    def setup(self):
        rnd = np.random.default_rng(0)
        self.keys = [bytes(k) for k in rnd.integers(0, 256, size=(100_000, 16), dtype=np.uint8)]
        self.values = b"".join(self.keys)
        self.offsets = np.arange(0, 16 * 100_001, 16, dtype=np.int64)

    def time_vector_buffer_100k_keys(self):
        partitions_for_buffer(self.values, self.offsets, 6)

    def time_vector_list_100k_keys(self):
        partitions_for_keys(self.keys, 6)

    def time_scalar_1k_keys(self):
        for k in self.keys[:1000]:
            partition_for_key(k, 6)


class RecordAppend:
    """100-byte value, 10-byte key, no headers, appended to an open batch (100k per call)."""

    def setup(self):
        self.buf = bytearray(1 << 24)
        self.key = b"k" * 10
        self.value = b"v" * 100

    def time_try_append_100k(self):
        b = RecordBatchBuilder(self.buf)
        append = b.try_append
        key, value = self.key, self.value
        for _ in range(100_000):
            append(1_700_000_000_000, key, value, None)

    def time_close_lz4_16k(self):
        b = RecordBatchBuilder(bytearray(16384), 3)
        while b.try_append(1, self.key, self.value, None) >= 0:
            pass
        b.close()
