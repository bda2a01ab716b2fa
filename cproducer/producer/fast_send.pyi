from typing import Any, Callable, Optional, Sequence, Tuple, Union

from cproducer.producer.internals.produce_request_result import (
    FutureRecordMetadata,
    RecordMetadata,
)

class FastSend:
    divert: bool
    def __init__(
        self,
        acc: Any,
        metadata: Any,
        slow: Callable[..., Any],
        wakeup: Callable[[], None],
        max_request_size: int,
        total_memory: int,
        max_block_ms: float,
        ignore_keys: bool,
        clock: Any = ...,
    ) -> None: ...
    def remember(self, topic: str, count: int, cluster: Any, version: Any) -> None: ...
    def send(
        self,
        topic: str,
        value: Any = ...,
        key: Any = ...,
        headers: Optional[
            Sequence[Tuple[str, Optional[Union[bytes, bytearray, memoryview]]]]
        ] = ...,
        partition: Optional[int] = ...,
        timestamp_ms: Optional[int] = ...,
        callback: Optional[
            Callable[[Optional[RecordMetadata], Optional[BaseException]], Any]
        ] = ...,
    ) -> FutureRecordMetadata: ...
