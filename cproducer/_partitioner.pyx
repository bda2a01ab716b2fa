"""BuiltInPartitioner: Java's KIP-794 strictly uniform sticky partitioner.

Unkeyed records stick to one partition; after ``batch.size`` bytes were produced to it the
partition switches (only when all its batches are full, forced at 2 x batch.size). The next
partition is drawn uniformly from the available partitions, or, with adaptive partitioning, with
weights inversely related to each partition's queue length: the RecordAccumulator feeds queue sizes
through ``update_partition_load_stats`` and they become a cumulative frequency table (a numpy int32
array): sizes 0 3 1 -> weights 4 1 3 -> CFT 4 5 8. A random r in [0, 8) then picks the first
index whose CFT entry is greater than r.
"""

import os
import threading

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t, uint64_t

from cproducer._murmur2 import partition_for_key as _partition_for_key

cnp.import_array()


cdef class StickyPartitionInfo:
    def __init__(self, int index):
        self.index = index
        self.produced_bytes = 0

    def __repr__(self):
        return f"StickyPartitionInfo(index={self.index}, produced_bytes={self.produced_bytes})"


cdef class BuiltInPartitioner:
    # attributes in _partitioner.pxd: _random (injected zero-arg callable, tests), _state
    # (splitmix64), _sticky, _cft/_ids/_length (the numpy cumulative frequency table)

    def __init__(self, str topic, int sticky_batch_size, random=None):
        if sticky_batch_size < 1:
            sticky_batch_size = 1
        self.topic = topic
        self.sticky_batch_size = sticky_batch_size
        self._random = random
        self._state = <uint64_t>int.from_bytes(os.urandom(8), "little")
        self._sticky = None
        self._lock = threading.Lock()
        self._cft = None
        self._ids = None
        self._length = 0

    cdef int _next_random(self) except -1:
        cdef uint64_t z
        if self._random is not None:
            return <int>(self._random() & 0x7FFFFFFF)
        self._state += 0x9E3779B97F4A7C15ULL
        z = self._state
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
        z = z ^ (z >> 31)
        return <int>(z & 0x7FFFFFFF)

    cpdef int next_partition(self, cluster) except -2:
        cdef int r = self._next_random()
        cdef int weighted, lo, hi, mid
        cdef const int32_t[::1] cft
        cft_obj, ids, length = self._cft, self._ids, self._length
        if cft_obj is None:
            available = cluster.available_partitions_for_topic(self.topic)
            if len(available) > 0:
                return available[r % len(available)].partition
            count = cluster.partition_count_for_topic(self.topic)
            if not count:
                raise ValueError(f"topic {self.topic!r} has no partitions in the cluster view")
            return r % count
        cft = cft_obj
        weighted = r % cft[length - 1]
        # first index with cft[index] > weighted (Java: binarySearch, then abs(result + 1))
        lo, hi = 0, length - 1
        while lo < hi:
            mid = (lo + hi) >> 1
            if cft[mid] > weighted:
                hi = mid
            else:
                lo = mid + 1
        return ids[lo]

    cpdef StickyPartitionInfo peek_current_partition_info(self, cluster):
        cdef StickyPartitionInfo info = self._sticky
        if info is not None:
            return info
        with self._lock:
            if self._sticky is None:
                self._sticky = StickyPartitionInfo(self.next_partition(cluster))
            return self._sticky

    cpdef bint is_partition_changed(self, StickyPartitionInfo info):
        return info is not None and self._sticky is not info

    cpdef void update_partition_info(self, StickyPartitionInfo info, int appended_bytes, cluster,
                                     bint enable_switch=True) except *:
        """Count the bytes produced to the sticky partition; switch when due (Java's rules)."""
        cdef long long produced
        if info is None:
            return
        info.produced_bytes += appended_bytes
        produced = info.produced_bytes
        if (produced >= self.sticky_batch_size and enable_switch) or \
                produced >= 2 * <long long>self.sticky_batch_size:
            with self._lock:
                if self._sticky is info:
                    self._sticky = StickyPartitionInfo(self.next_partition(cluster))

    cpdef void update_partition_load_stats(self, queue_sizes, partition_ids, int length) except *:
        """Java's updatePartitionLoadStats: turn queue sizes into a cumulative frequency table
        (in place, in ``queue_sizes`` when it is a numpy int32 array, as Java does)."""
        cdef cnp.ndarray[int32_t, ndim=1] sizes
        cdef int i, max_plus_1
        cdef bint all_equal = True
        if queue_sizes is None:
            self._cft = None
            return
        sizes = np.asarray(queue_sizes, dtype=np.int32)
        if length < 1 or sizes.shape[0] < 2:
            self._cft = None
            return
        if length > sizes.shape[0]:
            raise ValueError(f"length {length} is larger than queue_sizes ({sizes.shape[0]})")
        max_plus_1 = sizes[0]
        for i in range(1, length):
            if sizes[i] != max_plus_1:
                all_equal = False
            if sizes[i] > max_plus_1:
                max_plus_1 = sizes[i]
        max_plus_1 += 1
        if all_equal and length == sizes.shape[0]:
            self._cft = None
            return
        sizes[0] = max_plus_1 - sizes[0]
        for i in range(1, length):
            sizes[i] = max_plus_1 - sizes[i] + sizes[i - 1]
        self._ids = np.asarray(partition_ids, dtype=np.int32)
        self._length = length
        self._cft = sizes

    @property
    def load_stats(self):
        """None, or (cft, partition_ids, length)."""
        if self._cft is None:
            return None
        return self._cft, self._ids, self._length

    @staticmethod
    def partition_for_key(key_bytes, int num_partitions):
        return _partition_for_key(key_bytes, num_partitions)
