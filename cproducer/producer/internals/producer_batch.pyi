from typing import Any, Callable, Dict, List, Optional, Tuple

from cproducer.cluster import TopicPartition
from cproducer.producer.internals.produce_request_result import (
    FutureRecordMetadata,
    ProduceRequestResult,
    RecordMetadata,
)
from cproducer.record.record_batch_builder import RecordBatchBuilder

Callback = Callable[[Optional[RecordMetadata], Optional[BaseException]], Any]

IN_FLIGHT: int
SUCCEEDED: int
FAILED: int
SPLIT: int
ABORTED: int
FINAL_STATE_NAMES: Dict[int, str]

class ProducerBatch:
    topic_partition: TopicPartition
    topic: str
    partition: int
    builder: RecordBatchBuilder
    created_ms: int
    last_attempt_ms: int
    last_append_time: int
    drained_ms: int
    attempts: int
    retry: bool
    final_state: int
    result: ProduceRequestResult
    max_record_size: int
    pooled_buffer: Any
    is_splitting_batch: bool
    backoff_ms: int
    leader_epoch: int
    def __init__(
        self,
        topic_partition: TopicPartition,
        builder: RecordBatchBuilder,
        created_ms: int,
        is_splitting_batch: bool = ...,
    ) -> None: ...
    def try_append(
        self,
        timestamp: int,
        key: Any,
        value: Any,
        headers: Any,
        callback: Optional[Callback],
        now_ms: int,
    ) -> Optional[FutureRecordMetadata]: ...
    def complete(self, base_offset: int, log_append_time: int) -> bool: ...
    def complete_exceptionally(
        self,
        top_level_exception: BaseException,
        record_exceptions: Optional[Callable[[int], Optional[BaseException]]] = ...,
    ) -> bool: ...
    def abort(self, exc: BaseException) -> bool: ...
    def close(self) -> None: ...
    def close_for_record_appends(self) -> None: ...
    def buffer(self) -> memoryview: ...
    def set_producer_state(
        self, producer_id: int, epoch: int, base_sequence: int, is_transactional: bool
    ) -> None: ...
    def has_sequence(self) -> bool: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def last_sequence(self) -> int: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def record_count(self) -> int: ...
    @property
    def estimated_size_in_bytes(self) -> int: ...
    @property
    def is_done(self) -> bool: ...
    @property
    def is_closed(self) -> bool: ...
    def is_full(self) -> bool: ...
    def in_retry(self) -> bool: ...
    def waited_time_ms(self, now_ms: int) -> int: ...
    def has_reached_delivery_timeout(self, delivery_timeout_ms: int, now_ms: int) -> bool: ...
    def reenqueued(self, now_ms: int, backoff_ms: int = ...) -> None: ...
    def drained(self, now_ms: int) -> None: ...
    def records(self) -> List[Tuple[int, Optional[bytes], Optional[bytes], Any]]: ...
    def split(self, split_batch_size: int) -> List[ProducerBatch]: ...
    def add_segment(self, segment: Any) -> None: ...
    def add_completion_callback(
        self, future: FutureRecordMetadata, fn: Callable[[Any, Optional[BaseException]], None]
    ) -> None: ...

def produce_request_stats(
    batches: List[ProducerBatch],
) -> Tuple[int, int, int, int, int, int, int, float, Dict[str, Tuple[int, int, float, int]]]: ...
