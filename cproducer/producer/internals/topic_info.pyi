from typing import Any, Dict

from cproducer.cluster import TopicPartition
from cproducer.producer.internals.built_in_partitioner import BuiltInPartitioner
from cproducer.utils.fast_lock import FastLock

class PartitionDeque:
    tp: TopicPartition
    batches: Any  # collections.deque[ProducerBatch]
    lock: FastLock
    buffer_size: int  # bytes the next batch starts in (0: batch.size)
    def __init__(self, tp: TopicPartition) -> None: ...

class TopicInfo:
    topic: str
    compression_ratio: float
    deques: Dict[int, PartitionDeque]
    partitioner: BuiltInPartitioner
    def __init__(self, topic: str, batch_size: int, random: Any) -> None: ...
