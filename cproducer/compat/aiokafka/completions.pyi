import asyncio
from typing import Any, Callable, Optional, Tuple, TypeVar

_T = TypeVar("_T")

# A record's future keeps asyncio.Future's protocol; typed as its subclass so that asyncio's own
# stubs (wait, shield, ...) accept it, though isinstance(future, asyncio.Future) is False.
class Future(asyncio.Future[_T]):
    def __init__(self, *, loop: Optional[asyncio.AbstractEventLoop] = ...) -> None: ...

class LoopCompletions:
    loop: asyncio.AbstractEventLoop
    acks: int
    handovers: int
    def __init__(self, loop: asyncio.AbstractEventLoop, acks: int) -> None: ...
    def drain(self) -> None: ...
    def new_record_delivery(self) -> Tuple[Future[Any], Callable[[Any, Any], None]]: ...
    def new_batch_delivery(
        self, to_metadata: Callable[[Any], Any]
    ) -> Tuple[asyncio.Future[Any], Callable[[Any], None]]: ...
