from typing import Any, Callable, Dict, List, Optional, Set

from cproducer.cluster import TopicPartition
from cproducer.producer.internals.built_in_partitioner import BuiltInPartitioner
from cproducer.producer.internals.produce_request_result import FutureRecordMetadata, RecordMetadata
from cproducer.producer.internals.producer_batch import ProducerBatch
from cproducer.utils.fast_lock import FastLock

BATCH_OVERHEAD_BYTES: int
RETRY_BACKOFF_EXP_BASE: int
RETRY_BACKOFF_JITTER: float

Callback = Callable[[Optional[RecordMetadata], Optional[BaseException]], Any]

class RecordAppendResult:
    @property
    def future(self) -> Optional[FutureRecordMetadata]: ...
    @property
    def batch_is_full(self) -> bool: ...
    @property
    def new_batch_created(self) -> bool: ...
    @property
    def abort_for_new_batch(self) -> bool: ...
    @property
    def appended_bytes(self) -> int: ...
    def __init__(
        self,
        future: Optional[FutureRecordMetadata],
        batch_is_full: bool,
        new_batch_created: bool,
        abort_for_new_batch: bool,
        appended_bytes: int,
    ) -> None: ...

class ReadyCheckResult:
    ready_nodes: Set[int]
    next_ready_check_delay_ms: int
    unknown_leader_topics: Set[str]
    def __init__(
        self, ready_nodes: Set[int], next_ready_check_delay_ms: int, unknown_leader_topics: Set[str]
    ) -> None: ...

class PartitionDeque:
    tp: TopicPartition
    batches: Any  # collections.deque[ProducerBatch]
    lock: FastLock
    def __init__(self, tp: TopicPartition) -> None: ...

class TopicInfo:
    topic: str
    compression_ratio: float
    deques: Dict[int, PartitionDeque]
    partitioner: BuiltInPartitioner
    def __init__(self, topic: str, batch_size: int, random: Any) -> None: ...

class RecordAccumulator:
    batch_size: int
    compression_type: int
    compression_level: Optional[int]
    linger_ms: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    delivery_timeout_ms: int
    pool: Any
    adaptive: bool
    availability_timeout_ms: int
    transaction_manager: Any
    topic_infos: Dict[str, TopicInfo]
    incomplete: Set[ProducerBatch]
    muted: Set[TopicPartition]
    node_stats: Dict[int, List[int]]
    closed: bool
    flushes_in_progress: int
    appends_in_progress: int
    memory_wait_hook: Optional[Callable[[], None]]
    def __init__(
        self,
        batch_size: int,
        compression_type: int,
        linger_ms: int,
        retry_backoff_ms: int,
        retry_backoff_max_ms: int,
        delivery_timeout_ms: int,
        buffer_pool: Any,
        partitioner_adaptive_partitioning_enable: bool = ...,
        partitioner_availability_timeout_ms: int = ...,
        transaction_manager: Any = ...,
        random: Optional[Callable[[], int]] = ...,
        compression_level: Optional[int] = ...,
        max_batch_records: int = ...,
    ) -> None: ...
    @property
    def max_batch_records(self) -> int: ...
    def append(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        key: Any,
        value: Any,
        headers: Any,
        callback: Optional[Callback],
        max_time_to_block_ms: float,
        abort_on_new_batch: bool,
        now_ms: int,
        cluster: Any,
    ) -> RecordAppendResult: ...
    def topic_info(self, topic: str) -> TopicInfo: ...
    def deque_for(self, tp: TopicPartition) -> PartitionDeque: ...
    def new_batch_for(self, dq: PartitionDeque, buffer: Any, now_ms: int) -> ProducerBatch: ...
    def update_node_latency_stats(self, node_id: int, now_ms: int, can_drain: bool) -> None: ...
    def ready(self, cluster: Any, now_ms: int) -> ReadyCheckResult: ...
    def drain(
        self, cluster: Any, node_ids: Any, max_request_size: int, now_ms: int
    ) -> Dict[int, List[ProducerBatch]]: ...
    def expired_batches(self, now_ms: int) -> List[ProducerBatch]: ...
    def retry_backoff(self, attempts: int) -> int: ...
    def reenqueue(self, batch: ProducerBatch, now_ms: int) -> None: ...
    def split_and_reenqueue(self, big: ProducerBatch) -> int: ...
    def deallocate(self, batch: ProducerBatch) -> None: ...
    def mute_partition(self, tp: TopicPartition) -> None: ...
    def unmute_partition(self, tp: TopicPartition) -> None: ...
    def begin_flush(self) -> None: ...
    def flush_in_progress(self) -> bool: ...
    def await_flush_completion(self, timeout_s: Optional[float] = ...) -> bool: ...
    def has_undrained(self) -> bool: ...
    def has_incomplete(self) -> bool: ...
    def incomplete_batches(self) -> List[ProducerBatch]: ...
    def abort_incomplete_batches(self, exc: Optional[BaseException] = ...) -> None: ...
    def abort_undrained_batches(self, exc: BaseException) -> None: ...
    def abort_queued_batches(self, exc: BaseException) -> List[ProducerBatch]: ...
    def close(self) -> None: ...
    def partitions_with_batches(self) -> List[TopicPartition]: ...
    def queue_size(self, tp: TopicPartition) -> int: ...
    def batches_of(self, tp: TopicPartition) -> List[ProducerBatch]: ...
