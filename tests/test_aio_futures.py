"""A sent record's future keeps ``asyncio.Future``'s semantics: await, ``asyncio.gather`` (with
``return_exceptions``), ``cancel``, ``add_done_callback`` (each callback once, in its context, an
exception to the loop's handler), ``asyncio.wrap_future``, ``asyncio.wait_for``.

cproducer.aio resolves a batch's futures in one loop callback and runs their done-callbacks at
its end (``LoopCompletions``); aiokafka resolves a plain ``loop.create_future()`` on the loop,
each done-callback scheduled with ``call_soon``. Every test runs against both: the futures come
from ``new()``, ``complete(future, value)`` completes one from another thread, as the engine's
Sender thread does (aiokafka's sender task sets its futures on the loop itself)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any, Callable, Dict, List, Tuple

import aiokafka.errors
import pytest

from cproducer import errors as engine_errors
from cproducer.aio import errors as aio_errors
from cproducer.aio.completions import LoopCompletions
from cproducer.cluster import TopicPartition

TP = TopicPartition("topic", 0)
VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


class Ours:
    """cproducer.aio's futures and their completion by the engine's callbacks."""

    errors = aio_errors

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.completions = LoopCompletions(loop, -1)
        self.callbacks: Dict[int, Callable[[Any, Any], None]] = {}

    def new(self) -> asyncio.Future[Any]:
        future, callback = self.completions.new_record_delivery()
        self.callbacks[id(future)] = callback
        return future

    def complete(self, future: asyncio.Future[Any], offset: int) -> None:
        callback = self.callbacks.pop(id(future))
        if offset < 0:
            callback(None, engine_errors.KafkaTimeoutError("expired"))
        else:
            callback((TP.topic, TP.partition, TP, offset, 1000, None, 1, 1, -1), None)

    def offset(self, value: Any) -> int:
        return int(value.offset)


class Aiokafka:
    """aiokafka's: a plain future, set on the loop."""

    errors = aiokafka.errors

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def new(self) -> asyncio.Future[Any]:
        return self.loop.create_future()

    def complete(self, future: asyncio.Future[Any], offset: int) -> None:
        def resolve() -> None:
            if future.done():  # cancelled by its awaiter, as aiokafka checks
                return
            if offset < 0:
                future.set_exception(aiokafka.errors.KafkaTimeoutError())
            else:
                future.set_result(offset)

        self.loop.call_soon_threadsafe(resolve)

    def offset(self, value: Any) -> int:
        return int(value)


@pytest.fixture(params=["cproducer.aio", "aiokafka"])
def peer(request: pytest.FixtureRequest) -> Callable[[asyncio.AbstractEventLoop], Any]:
    return Ours if request.param == "cproducer.aio" else Aiokafka


def _from_thread(fn: Callable[[], None]) -> None:
    thread = threading.Thread(target=fn)
    thread.start()
    thread.join()


def test_await_and_gather_with_return_exceptions(peer: Any) -> None:
    async def main() -> Tuple[List[Any], Any, List[Any]]:
        p = peer(asyncio.get_running_loop())
        futures = [p.new() for _ in range(5)]
        assert all(isinstance(f, asyncio.Future) and asyncio.isfuture(f) for f in futures)
        assert all(asyncio.wrap_future(f) is f for f in futures)
        gathered = asyncio.gather(*futures, return_exceptions=True)
        awaited = asyncio.ensure_future(futures[0])
        futures[3].cancel()
        _from_thread(lambda: [p.complete(f, -1 if i == 2 else i) for i, f in enumerate(futures)])
        results = await gathered
        assert await awaited is results[0]
        with pytest.raises(p.errors.KafkaTimeoutError):
            await futures[2]
        with pytest.raises(asyncio.CancelledError):
            await futures[3]
        # a gather without return_exceptions raises the first error
        with pytest.raises(p.errors.KafkaTimeoutError):
            await asyncio.gather(futures[0], futures[2])
        return results, p, futures

    results, p, futures = asyncio.run(main())
    assert [p.offset(r) for r in results[:2]] + [p.offset(results[4])] == [0, 1, 4]
    assert isinstance(results[2], p.errors.KafkaTimeoutError)
    assert isinstance(results[3], asyncio.CancelledError)
    assert futures[3].cancelled()


def test_done_callbacks_run_once_in_their_context_errors_to_the_loops_handler(
    peer: Any,
) -> None:
    async def main() -> Tuple[List[Any], List[Any], Any]:
        loop = asyncio.get_running_loop()
        handled: List[Any] = []
        loop.set_exception_handler(lambda _loop, context: handled.append(context["exception"]))
        p = peer(loop)
        calls: List[Any] = []
        future = p.new()

        def boom(f: asyncio.Future[Any]) -> None:
            raise ValueError("from a done-callback")

        def removed(f: asyncio.Future[Any]) -> None:
            calls.append("removed")

        ctx = contextvars.copy_context()
        ctx.run(VAR.set, "the callback's")
        future.add_done_callback(
            lambda f: calls.append(("first", VAR.get(), f.done())), context=ctx
        )
        future.add_done_callback(boom)
        future.add_done_callback(removed)
        assert future.remove_done_callback(removed) == 1
        future.add_done_callback(lambda f: calls.append(("last", VAR.get(), threading.get_ident())))
        _from_thread(lambda: p.complete(future, 7))
        await asyncio.sleep(0.05)
        # added once done: scheduled at once, as asyncio does
        future.add_done_callback(lambda f: calls.append("late"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return calls, handled, p.offset(future.result())

    calls, handled, offset = asyncio.run(main())
    assert offset == 7
    assert calls == [
        ("first", "the callback's", True),
        ("last", "unset", threading.get_ident()),
        "late",
    ]
    assert [str(e) for e in handled] == ["from a done-callback"]


def test_wait_for_times_out_and_cancels_then_the_completion_is_ignored(peer: Any) -> None:
    async def main() -> Tuple[Any, Any, List[Any]]:
        loop = asyncio.get_running_loop()
        handled: List[Any] = []
        loop.set_exception_handler(lambda _loop, context: handled.append(context))
        p = peer(loop)
        late, in_time = p.new(), p.new()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(late, 0.01)
        assert late.cancelled()
        loop.call_later(
            0.01, lambda: threading.Thread(target=p.complete, args=(in_time, 3)).start()
        )
        got = await asyncio.wait_for(in_time, 5)
        _from_thread(lambda: p.complete(late, 4))  # the record completes after all
        await asyncio.sleep(0.05)
        return got, late, handled

    got, late, handled = asyncio.run(main())
    assert late.cancelled() and handled == []
    assert got is not None


def test_a_task_awaiting_a_future_is_cancelled_and_the_future_with_it(peer: Any) -> None:
    async def main() -> Tuple[Any, Any]:
        p = peer(asyncio.get_running_loop())
        future = p.new()
        task = asyncio.ensure_future(future)  # a plain future's awaiter: the future itself
        waiter = asyncio.create_task(_await(future))
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        _from_thread(lambda: p.complete(future, 1))
        await asyncio.sleep(0.05)
        return future, task

    future, task = asyncio.run(main())
    assert future.cancelled() and task is future


async def _await(future: asyncio.Future[Any]) -> Any:
    return await future


@pytest.mark.parametrize("debug", [False, True])
def test_many_futures_of_one_hand_over_each_wake_their_awaiter(debug: bool) -> None:
    """One hand-over resolves a batch: every awaiting task and gather is woken, in debug mode
    too (the loop's own call_soon then schedules the callbacks), and the loop's ``call_soon``
    is its own again afterwards."""

    async def main() -> Tuple[List[int], List[int], bool]:
        loop = asyncio.get_running_loop()
        p = Ours(loop)
        futures = [p.new() for _ in range(300)]
        tasks = [asyncio.create_task(_await(f)) for f in futures[:100]]
        gathered = asyncio.gather(*futures[100:], return_exceptions=True)
        await asyncio.sleep(0)
        _from_thread(lambda: [p.complete(f, i) for i, f in enumerate(futures)])
        awaited = [md.offset for md in await asyncio.gather(*tasks)]
        return awaited, [md.offset for md in await gathered], "call_soon" in vars(loop)

    awaited, gathered, patched = asyncio.run(main(), debug=debug)
    assert awaited == list(range(100)) and gathered == list(range(100, 300))
    assert not patched


def test_a_done_callback_raising_keyboardinterrupt_stops_the_loop_the_rest_run_later(
    peer: Any,
) -> None:
    """As the loop does with a Handle: KeyboardInterrupt (and SystemExit) propagate out of the
    loop; the callbacks not run yet stay scheduled and run when the loop runs again."""
    loop = asyncio.new_event_loop()
    try:
        p = peer(loop)
        calls: List[str] = []

        def interrupt(f: asyncio.Future[Any]) -> None:
            calls.append("interrupt")
            raise KeyboardInterrupt

        async def make() -> Tuple[asyncio.Future[Any], asyncio.Future[Any]]:
            first, second = p.new(), p.new()
            first.add_done_callback(lambda f: calls.append("first"))
            first.add_done_callback(interrupt)
            second.add_done_callback(lambda f: calls.append("second"))
            return first, second

        first, second = loop.run_until_complete(make())
        _from_thread(lambda: (p.complete(first, 1), p.complete(second, 2)))
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(asyncio.sleep(0.05))
        assert calls == ["first", "interrupt"]
        loop.run_until_complete(asyncio.sleep(0.01))
        assert calls == ["first", "interrupt", "second"]
    finally:
        loop.close()
