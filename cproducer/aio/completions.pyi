import asyncio
from typing import Any, Callable

class LoopCompletions:
    acks: int
    handovers: int
    def __init__(self, loop: asyncio.AbstractEventLoop, acks: int) -> None: ...
    def drain(self) -> None: ...

class DeliveryFuture(asyncio.Future[Any]):
    def __call__(self, metadata: Any, error: BaseException | None) -> None: ...

class BatchDeliveryFuture(asyncio.Future[Any]):
    def __call__(self, result: Any) -> None: ...
    def resolve(self, result: Any) -> None: ...

def new_delivery_future(
    completions: LoopCompletions, loop: asyncio.AbstractEventLoop
) -> DeliveryFuture: ...
def new_batch_future(
    completions: LoopCompletions,
    loop: asyncio.AbstractEventLoop,
    to_metadata: Callable[[Any], Any],
) -> BatchDeliveryFuture: ...
