import asyncio
from typing import Any, Callable, Coroutine, Dict, FrozenSet, Generator, Optional, Tuple

class TopicPartitions:
    version: int
    count: int
    all: Tuple[int, ...]
    all_set: FrozenSet[int]
    available: Tuple[int, ...]
    n_available: int
    def __init__(
        self, version: int, all_ids: Tuple[int, ...], available: Tuple[int, ...]
    ) -> None: ...

class AioFastSend:
    off_loop: int
    divert: bool
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        engine_send: Callable[..., Any],
        slow: Callable[..., Any],
        pool: Any,
        metadata: Any,
        completions: Any,
        transaction_manager: Any,
        topics: Dict[str, TopicPartitions],
        transactional: bool,
        batch_size: int,
        small_record: int,
    ) -> None: ...
    async def send(
        self,
        topic: str,
        value: Any = ...,
        key: Any = ...,
        partition: Optional[int] = ...,
        timestamp_ms: Optional[int] = ...,
        headers: Any = ...,
    ) -> asyncio.Future[Any]: ...

class SendCoroutine(Coroutine[Any, Any, asyncio.Future[Any]]):
    cr_await: Any
    cr_running: bool
    def __await__(self) -> Generator[Any, None, asyncio.Future[Any]]: ...
    def __next__(self) -> Any: ...
    def send(self, value: Any) -> Any: ...
    def throw(self, *args: Any) -> Any: ...
    def close(self) -> None: ...
