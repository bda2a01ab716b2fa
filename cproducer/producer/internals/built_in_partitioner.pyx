# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. The sticky partition's compare-and-set relies on it.
"""BuiltInPartitioner: Java's KIP-794 strictly uniform sticky partitioner (one per topic).

Unkeyed records stick to one partition. ``update_partition_info`` counts the bytes produced to it
and switches once ``batch.size`` bytes were produced, but only when the caller allows it (all the
partition's batches are full), and in any case at 2 x ``batch.size``.

The next partition is drawn uniformly from the available partitions (those with a leader; from all
partitions when none has one) or, with adaptive partitioning, with weights that fall as the
partition's queue grows. The RecordAccumulator feeds queue sizes through
``update_partition_load_stats``, which turns them into a cumulative frequency table (CFT, a numpy
int32 array): sizes 0 3 1 -> weights (max + 1 - size) 4 1 3 -> CFT 4 5 8. A random r in [0, 8) then
picks the first index whose CFT entry is greater than r: 0-3 -> index 0, 4 -> 1, 5-7 -> 2.

Thread safety: the sticky partition and the load stats are each one reference, replaced whole
(Java's AtomicReference and volatile field). The compare-and-set of the sticky partition relies on
the GIL: no Python code runs between its read and its write. The uniform choice caches the
available partition ids of the last cluster object it saw (a Cluster is immutable).
"""

import os

import numpy as np

cimport cython
cimport numpy as cnp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM
from libc.stdint cimport int32_t, int64_t, uint64_t

from cproducer.utils.murmur2 cimport murmur2_partition

from cproducer.utils.murmur2 import partition_for_key as _partition_for_key

cnp.import_array()


cdef class StickyPartitionInfo:
    """The current sticky partition (``index``) and the bytes produced to it so far."""

    def __init__(self, int index):
        self.index = index
        self.produced_bytes = 0

    def __repr__(self):
        return f"StickyPartitionInfo(index={self.index}, produced_bytes={self.produced_bytes})"


cdef inline StickyPartitionInfo _new_info(int index):
    cdef StickyPartitionInfo info = StickyPartitionInfo.__new__(StickyPartitionInfo)
    info.index = index
    return info


@cython.final
cdef class PartitionLoadStats:
    """One immutable snapshot of the adaptive statistics: the CFT over ``length`` partitions."""

    cdef readonly object cumulative_frequency_table  # ndarray[int32]
    cdef readonly object partition_ids               # ndarray[int32]
    cdef readonly int length
    # the arrays' data (alive, and not resizable, while this object holds the arrays)
    cdef const int32_t* _cft
    cdef const int32_t* _ids

    def __repr__(self):
        return (
            f"PartitionLoadStats(cft={self.cumulative_frequency_table[:self.length].tolist()}, "
            f"partition_ids={self.partition_ids[:self.length].tolist()})"
        )


cdef object _int32_array(object values, str name, bint writable):
    """``values`` itself when it is a C-contiguous 1-D int32 ndarray (writable if asked), else a
    new int32 array made from it."""
    cdef cnp.ndarray arr
    if cnp.PyArray_Check(values):
        arr = <cnp.ndarray>values
        if (cnp.PyArray_TYPE(arr) == cnp.NPY_INT32 and cnp.PyArray_NDIM(arr) == 1
                and cnp.PyArray_IS_C_CONTIGUOUS(arr)
                and (cnp.PyArray_ISWRITEABLE(arr) or not writable)):
            return values
    try:
        out = np.array(values, dtype=np.int32)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(
            f"{name} must be a sequence or array of int32 values, got {type(values).__name__} "
            f"({exc})"
        ) from None
    if out.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {out.shape}")
    return out


@cython.final
cdef class _PartitionCache:
    """The uniform choice's view of one (immutable) cluster: the topic's available partition ids,
    or None and the partition count when no partition has a leader."""

    cdef object cluster
    cdef tuple available
    cdef int count

    def __init__(self, cluster, str topic):
        available = cluster.available_partitions_for_topic(topic)
        if len(available) > 0:
            self.available = tuple([p.partition for p in available])
            self.count = len(self.available)
        else:
            self.available = None
            self.count = len(cluster.partitions_for_topic(topic))
            if self.count == 0:
                raise ValueError(f"topic {topic!r} has no partitions in the cluster view")
        self.cluster = cluster


cdef class BuiltInPartitioner:
    """``BuiltInPartitioner(topic, sticky_batch_size, random=None)``: ``random`` is a zero-arg
    callable returning an int (made non-negative as Java's ``Utils.toPositive``), for tests; by
    default a splitmix64 generator seeded from ``os.urandom``."""

    def __init__(self, str topic not None, int sticky_batch_size, random=None):
        if sticky_batch_size < 1:
            raise ValueError(f"sticky_batch_size must be >= 1, got {sticky_batch_size}")
        if random is not None and not callable(random):
            raise TypeError(
                f"random must be None or a zero-argument callable returning an int, got "
                f"{type(random).__name__}"
            )
        self.topic = topic
        self.sticky_batch_size = sticky_batch_size
        self._random = random
        self._state = <uint64_t>int.from_bytes(os.urandom(8), "little")
        self._sticky = None
        self._stats = None
        self._partition_cache = None

    cdef int _next_random(self) except -1:
        # a non-negative 31-bit int (Java: toPositive(ThreadLocalRandom.nextInt()))
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
        """Java's nextPartition: a random partition, weighted by the load stats when there are
        some, else uniform over the available partitions (over all when none is available)."""
        cdef int r = self._next_random()
        cdef PartitionLoadStats stats = self._stats
        cdef _PartitionCache cache
        cdef int weighted, lo, hi, mid
        if stats is not None:
            weighted = r % stats._cft[stats.length - 1]
            # the first index whose CFT entry is greater than `weighted` (Java: binarySearch,
            # then abs(result + 1): an exact hit moves to the next entry)
            lo = 0
            hi = stats.length - 1
            while lo < hi:
                mid = (lo + hi) >> 1
                if stats._cft[mid] > weighted:
                    hi = mid
                else:
                    lo = mid + 1
            return stats._ids[lo]
        cache = self._partition_cache
        if cache is None or cache.cluster is not cluster:
            cache = _PartitionCache(cluster, self.topic)
            self._partition_cache = cache
        if cache.available is None:
            # no partition has a leader: one of all partitions (ids 0..n-1, as Java)
            return r % cache.count
        return <int>(<object>PyTuple_GET_ITEM(cache.available, r % cache.count))

    cpdef StickyPartitionInfo peek_current_partition_info(self, cluster):
        """The current sticky partition, chosen now if there is none yet."""
        cdef StickyPartitionInfo info = self._sticky
        if info is not None:
            return info
        info = _new_info(self.next_partition(cluster))
        if self._sticky is None:  # compare-and-set: someone may have raced us
            self._sticky = info
        return self._sticky

    cpdef bint is_partition_changed(self, StickyPartitionInfo info):
        """Whether another thread switched the sticky partition since ``info`` was peeked (call
        under the partition's queue lock)."""
        return info is not None and self._sticky is not info

    cpdef void update_partition_info(self, StickyPartitionInfo info, int appended_bytes, cluster,
                                     bint enable_switch=True) except *:
        """Count ``appended_bytes`` produced to ``info``'s partition; switch to the next partition
        at ``sticky_batch_size`` bytes when ``enable_switch``, at twice that in any case (call
        under the partition's queue lock). ``info`` None (no built-in partitioning) does
        nothing."""
        cdef long long produced
        cdef StickyPartitionInfo switched
        if info is None:
            return
        info.produced_bytes += appended_bytes
        produced = info.produced_bytes
        if ((produced >= self.sticky_batch_size and enable_switch)
                or produced >= 2 * <long long>self.sticky_batch_size):
            switched = _new_info(self.next_partition(cluster))
            if self._sticky is info:  # a stale info (already switched) does not switch again
                self._sticky = switched

    cpdef void update_partition_load_stats(self, queue_sizes, partition_ids, int length) except *:
        """Java's updatePartitionLoadStats. ``queue_sizes[:length]`` (partitions with a leader, in
        the order of ``partition_ids``) become the CFT: in place when ``queue_sizes`` is a
        C-contiguous writable int32 ndarray (as Java does; the caller must not reuse it), else in
        a copy (lists, other dtypes). No stats (uniform choice) when ``queue_sizes`` is None, when
        ``length`` < 1, when the topic has fewer than 2 partitions (``len(queue_sizes)``), or when
        all sizes are equal and none was left out (``length == len(queue_sizes)``)."""
        cdef int32_t* sizes
        cdef const int32_t* ids
        cdef cnp.ndarray sizes_arr, ids_arr
        cdef Py_ssize_t i, n
        cdef int64_t max_plus_1, total = 0
        cdef bint all_equal = True
        cdef PartitionLoadStats stats
        if queue_sizes is None:
            self._stats = None
            return
        if partition_ids is None:
            raise TypeError("partition_ids must be given with queue_sizes, got None")
        sizes_arr = _int32_array(queue_sizes, "queue_sizes", True)
        ids_arr = _int32_array(partition_ids, "partition_ids", False)
        sizes = <int32_t*>cnp.PyArray_DATA(sizes_arr)
        ids = <const int32_t*>cnp.PyArray_DATA(ids_arr)
        n = cnp.PyArray_DIM(sizes_arr, 0)
        if length < 1 or n < 2:
            self._stats = None
            return
        if length > n:
            raise ValueError(f"length {length} is larger than queue_sizes ({n} entries)")
        if length > cnp.PyArray_DIM(ids_arr, 0):
            raise ValueError(
                f"length {length} is larger than partition_ids "
                f"({cnp.PyArray_DIM(ids_arr, 0)} entries)"
            )
        max_plus_1 = sizes[0]
        for i in range(1, length):
            if sizes[i] != max_plus_1:
                all_equal = False
            if sizes[i] > max_plus_1:
                max_plus_1 = sizes[i]
        max_plus_1 += 1
        if all_equal and length == n:
            self._stats = None
            return
        for i in range(length):
            total += max_plus_1 - sizes[i]
        if total > 0x7FFFFFFF:
            raise ValueError(
                f"queue_sizes spread too wide for an int32 frequency table: {total} in all"
            )
        # invert each size (max + 1 - size) and fold into a running sum, in place
        sizes[0] = <int32_t>(max_plus_1 - sizes[0])
        for i in range(1, length):
            sizes[i] = <int32_t>(max_plus_1 - sizes[i] + sizes[i - 1])
        stats = PartitionLoadStats.__new__(PartitionLoadStats)
        stats.cumulative_frequency_table = sizes_arr
        stats.partition_ids = ids_arr
        stats.length = length
        stats._cft = sizes
        stats._ids = ids
        self._stats = stats  # readers see the old snapshot or this one, whole

    @property
    def load_stats(self):
        """None, or ``(cft, partition_ids, length)``: int32 arrays, meaningful up to ``length``."""
        cdef PartitionLoadStats stats = self._stats
        if stats is None:
            return None
        return stats.cumulative_frequency_table, stats.partition_ids, stats.length

    @property
    def load_stats_range_end(self):
        """With load stats: the end of the random range (the last CFT entry); else None."""
        cdef PartitionLoadStats stats = self._stats
        if stats is None:
            return None
        return stats._cft[stats.length - 1]

    @property
    def current_partition_info(self):
        """The current StickyPartitionInfo, or None before the first peek (no side effect)."""
        return self._sticky

    @staticmethod
    def partition_for_key(key_bytes, int num_partitions):
        """The keyed choice: ``toPositive(murmur2(key_bytes)) % num_partitions`` (Java)."""
        if num_partitions <= 0:
            raise ValueError(f"num_partitions must be > 0, got {num_partitions}")
        if type(key_bytes) is bytes:
            return murmur2_partition(<const unsigned char*>PyBytes_AS_STRING(key_bytes),
                                     PyBytes_GET_SIZE(key_bytes), num_partitions)
        return _partition_for_key(key_bytes, num_partitions)

    def __repr__(self):
        return (
            f"BuiltInPartitioner(topic={self.topic!r}, sticky_batch_size="
            f"{self.sticky_batch_size}, current={self._sticky!r}, stats={self._stats!r})"
        )
