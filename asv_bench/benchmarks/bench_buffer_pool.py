"""asv: BufferPool allocate + deallocate, uncontended (one thread), 1000 pairs per sample
(divide by 1000 for one pair)."""

from cproducer.producer.internals.buffer_pool import BufferPool

BATCH = 16384
PAIRS = 1000


class BufferPoolPair:
    """An allocate and its deallocate: a pooled ``batch.size`` buffer off the free list, or a
    non-pooled size (a fresh bytearray from the unallocated memory)."""

    params = ["pooled", "non_pooled"]
    param_names = ["size"]

    def setup(self, kind):
        self.pool = BufferPool(32 << 20, BATCH)
        self.pool.deallocate(self.pool.allocate(BATCH, 1000.0))  # one buffer on the free list
        self.size = BATCH if kind == "pooled" else 1000

    def time_1000_allocate_deallocate(self, kind):
        allocate, deallocate, size = self.pool.allocate, self.pool.deallocate, self.size
        for _ in range(PAIRS):
            deallocate(allocate(size, 1000.0))

    def time_1000_allocate_deallocate_with_size(self, kind):
        allocate, deallocate, size = self.pool.allocate, self.pool.deallocate, self.size
        for _ in range(PAIRS):
            deallocate(allocate(size, 1000.0), size)
