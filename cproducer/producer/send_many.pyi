from typing import Any, Dict, List, Optional, Tuple

import numpy as np

class Column:
    n: int
    lengths: np.ndarray

def objects_column(seq: Any, what: str) -> Column: ...
def buffer_column(data: Any, starts: Any, ends: Any, valid: Any = ...) -> Column: ...
def offsets_column(
    data: Any, offsets: Any, first: int, n: int, wide: bool, valid: Any = ...
) -> Column: ...
def partition_order(partitions: np.ndarray) -> Optional[np.ndarray]: ...
def size_upper_bounds(key_lengths: Any, value_lengths: Any, headers_sizes: Any) -> np.ndarray: ...
def partitions_of_column(keys: Column, num_partitions: int) -> np.ndarray: ...

class SendManyCompletion:
    count: int
    partitions: np.ndarray
    offsets: np.ndarray
    errors: Dict[int, BaseException]
    def __init__(self, count: int) -> None: ...
    def complete_segment(
        self,
        order: Optional[np.ndarray],
        start: int,
        end: int,
        partition: int,
        base_offset: int,
        first_rel_offset: int,
        error: Optional[BaseException],
    ) -> None: ...
    def fail_all(self, error: BaseException) -> None: ...
    def _finish(self) -> None: ...

def fill_segment(
    partitions: np.ndarray,
    offsets: np.ndarray,
    order: Optional[np.ndarray],
    start: int,
    end: int,
    partition: int,
    first_offset: int,
) -> None: ...
def append_columns(
    acc: Any,
    topic: str,
    values: Column,
    keys: Optional[Column],
    partitions: np.ndarray,
    order: Optional[np.ndarray],
    timestamps: Optional[np.ndarray],
    timestamp: int,
    headers: Optional[List[Any]],
    batch_future: Any,
    max_block_ms: float,
    now: int,
    cluster: Any,
    sizes: np.ndarray,
    wake: Any = ...,
) -> Tuple[int, bool, Optional[BaseException]]: ...
