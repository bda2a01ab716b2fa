from typing import Any, List, Optional, Sequence, Tuple, Union

from cproducer.utils.memory_budget import MemoryBudget

RECORD_BATCH_OVERHEAD: int
COMPRESSION_RATE_ESTIMATION_FACTOR: float

# (str key, bytes-like value or None) pairs, as tuples or 2-item lists
Headers = Optional[Sequence[Union[Tuple[str, Any], List[Any]]]]

def record_size_in_bytes(
    offset_delta: int, timestamp_delta: int, key: Any, value: Any, headers: Headers = ...
) -> int: ...
def estimate_size_in_bytes_upper_bound(key: Any, value: Any, headers: Headers = ...) -> int: ...
def headers_size_in_bytes(headers: Headers) -> int: ...
def set_gil_release_threshold(nbytes: int) -> int: ...

class RecordBatchBuilder:
    def __init__(
        self,
        buffer: Any,
        compression_type: int = ...,
        write_limit: int = ...,
        producer_id: int = ...,
        producer_epoch: int = ...,
        base_sequence: int = ...,
        is_transactional: bool = ...,
        compression_ratio_estimate: float = ...,
        compression_level: Optional[int] = ...,
        memory_budget: Optional[MemoryBudget] = ...,
        stage_size: int = ...,
    ) -> None: ...
    def try_append(self, timestamp: int, key: Any, value: Any, headers: Headers = ...) -> int: ...
    def has_room_for(
        self, timestamp: int, key: Any, value: Any, headers: Headers = ...
    ) -> bool: ...
    def set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool
    ) -> None: ...
    def close_for_record_appends(self) -> None: ...
    def close(self) -> None: ...
    def buffer(self) -> memoryview: ...
    def release_memory(self) -> None: ...
    def open_records(self) -> bytes: ...
    @property
    def charged_memory(self) -> int: ...
    compression_ratio: float
    num_records: int
    size_in_bytes: int
    estimated_size_in_bytes: int
    uncompressed_size: int
    write_limit: int
    capacity: int
    is_full: bool
    is_closed: bool
    compression_type: int
    first_timestamp: int
    max_timestamp: int
    last_offset_delta: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
