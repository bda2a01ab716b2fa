from typing import Any, Callable, Dict, List, Optional

from cproducer.compat.confluent.message import DeliveryReports

class ProducePath:
    default_callback: Any
    closed_reason: Optional[str]
    poll_slow: Callable[[float], int]
    quick_poll: bool
    @property
    def waiting(self) -> int: ...
    def __init__(
        self,
        send: Callable[..., Any],
        check_send: Callable[[], None],
        metadata: Any,
        wakeup: Callable[[], None],
        topic_time_ms: Callable[[], int],
        reports: DeliveryReports,
        partitioner: str,
        sticky_ms: int,
        max_count: int,
        max_size: int,
        message_timeout_ms: int,
        default_callback: Any = ...,
    ) -> None: ...
    def produce(
        self,
        topic: str,
        value: Any = ...,
        key: Any = ...,
        partition: int = ...,
        callback: Any = ...,
        on_delivery: Any = ...,
        timestamp: int = ...,
        headers: Any = ...,
    ) -> None: ...
    def poll(self, timeout: float = ...) -> int: ...
    def drain(self) -> None: ...
    def purge_waiting(self, error: Any) -> None: ...
    def produce_batch(
        self,
        topic: str,
        messages: List[Dict[str, Any]],
        partition: int = ...,
        callback: Any = ...,
        on_delivery: Any = ...,
    ) -> int: ...
