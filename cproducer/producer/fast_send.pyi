from typing import Any, Callable, Optional

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
        headers: Any = ...,
        partition: Optional[int] = ...,
        timestamp_ms: Optional[int] = ...,
        callback: Any = ...,
    ) -> Any: ...
