"""A sent record's future keeps ``asyncio.Future``'s semantics: await, ``asyncio.gather`` (with
``return_exceptions``), ``cancel``, ``add_done_callback`` (each callback once, in its context, an
exception to the loop's handler), ``asyncio.wrap_future``, ``asyncio.wait_for``.

cproducer.aio resolves a batch's futures in one loop callback and runs their done-callbacks at
its end (``LoopCompletions``); aiokafka resolves a plain ``loop.create_future()`` on the loop,
each done-callback scheduled with ``call_soon``. Every test runs against both: the futures come
from ``new()``, ``complete(future, value)`` completes one from another thread, as the engine's
Sender thread does (aiokafka's sender task sets its futures on the loop itself).

The record future's own type then gets every semantic of asyncio's Future that asyncio relies on
(states, exceptions, cancel and its message, done-callbacks scheduled through the loop in their
context, await, tasks, gather, wait, wait_for, shield, as_completed, wrap_future,
run_until_complete, the report of an exception never retrieved), each test run on
``loop.create_future()`` too: asyncio's own type passing it proves the test right."""

from __future__ import annotations

import asyncio
import contextvars
import gc
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
        assert all(asyncio.isfuture(f) for f in futures)
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


# The future type itself: every test below runs on asyncio's own ``asyncio.Future`` (which proves
# the test asserts asyncio's semantics) and on cproducer.aio's record future.


class _Made:
    """Futures of one kind on one loop; a record future's delivery is kept, as the engine keeps
    it while the record is in flight."""

    def __init__(self, kind: str, loop: asyncio.AbstractEventLoop) -> None:
        self.kind = kind
        self.loop = loop
        self.completions = LoopCompletions(loop, -1)
        self.deliveries: List[Any] = []

    def new(self) -> asyncio.Future[Any]:
        if self.kind == "asyncio.Future":
            return self.loop.create_future()
        future, delivery = self.completions.new_record_delivery()
        self.deliveries.append(delivery)
        return future


@pytest.fixture(params=["asyncio.Future", "cproducer.aio"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _run(kind: str, body: Callable[[_Made], Any]) -> Any:
    async def main() -> Any:
        return await body(_Made(kind, asyncio.get_running_loop()))

    return asyncio.run(main())


def test_states_results_and_invalid_states(kind: str) -> None:
    async def body(m: _Made) -> None:
        f = m.new()
        assert asyncio.isfuture(f) and hasattr(type(f), "_asyncio_future_blocking")
        assert f._asyncio_future_blocking is False
        f._asyncio_future_blocking = True  # per instance, as a task sets it
        assert f._asyncio_future_blocking is True and asyncio.isfuture(f)
        f._asyncio_future_blocking = False
        assert f.get_loop() is m.loop
        assert not f.done() and not f.cancelled()
        assert repr(f) == "<Future pending>"
        with pytest.raises(asyncio.InvalidStateError):
            f.result()
        with pytest.raises(asyncio.InvalidStateError):
            f.exception()
        f.set_result(42)
        assert f.done() and not f.cancelled() and f.result() == 42 and f.exception() is None
        assert repr(f) == "<Future finished result=42>"
        with pytest.raises(asyncio.InvalidStateError):
            f.set_result(1)
        with pytest.raises(asyncio.InvalidStateError):
            f.set_exception(ValueError())
        assert f.cancel() is False and not f.cancelled()
        assert type(f)[int] is not None  # __class_getitem__

    _run(kind, body)


def test_exceptions_are_raised_and_retrieved(kind: str) -> None:
    async def body(m: _Made) -> None:
        f = m.new()
        f.set_exception(ValueError)  # a class: instantiated
        assert type(f.exception()) is ValueError
        with pytest.raises(ValueError):
            f.result()
        assert repr(f) == "<Future finished exception=ValueError()>"
        with pytest.raises(TypeError):
            m.new().set_exception(StopIteration())
        g = m.new()
        error = KeyError("k")
        g.set_exception(error)
        with pytest.raises(KeyError) as raised:
            await g
        assert raised.value is error

    _run(kind, body)


def test_cancel_with_a_message(kind: str) -> None:
    async def body(m: _Made) -> None:
        f = m.new()
        calls: List[Any] = []
        f.add_done_callback(calls.append)
        assert f.cancel("the reason") is True
        assert calls == []  # scheduled, not called inside cancel
        assert f.cancelled() and f.done() and f.cancel() is False
        for get in (f.result, f.exception):
            with pytest.raises(asyncio.CancelledError) as raised:
                get()
            assert raised.value.args == ("the reason",)
        with pytest.raises(asyncio.InvalidStateError):
            f.set_result(1)
        await asyncio.sleep(0)
        assert calls == [f]
        with pytest.raises(asyncio.CancelledError):
            await f
        assert repr(f) == "<Future cancelled>"

    _run(kind, body)


def test_done_callbacks_are_scheduled_through_the_loop_never_called_at_once(kind: str) -> None:
    async def body(m: _Made) -> None:
        calls: List[Any] = []
        f = m.new()
        f.add_done_callback(lambda fut: calls.append(("first", fut)))
        f.add_done_callback(lambda fut: calls.append(("second", fut)))
        f.set_result(1)
        assert calls == []
        await asyncio.sleep(0)
        assert calls == [("first", f), ("second", f)]
        # added once done: scheduled, not called inside add_done_callback
        f.add_done_callback(lambda fut: calls.append(("late", fut)))
        assert len(calls) == 2
        await asyncio.sleep(0)
        assert calls[2] == ("late", f)
        g = m.new()
        g.add_done_callback(lambda fut: calls.append(("failed", fut)))
        g.set_exception(ValueError())
        assert len(calls) == 3
        await asyncio.sleep(0)
        assert calls[3] == ("failed", g) and type(g.exception()) is ValueError

    _run(kind, body)


def test_done_callbacks_run_in_the_context_they_were_added_in(kind: str) -> None:
    async def body(m: _Made) -> List[str]:
        seen: List[str] = []
        f = m.new()
        token = VAR.set("when added")
        f.add_done_callback(lambda fut: seen.append(VAR.get()))
        VAR.set("changed later")  # not seen: the callback has a copy of the context
        ctx = contextvars.copy_context()
        ctx.run(VAR.set, "given")
        f.add_done_callback(lambda fut: seen.append(VAR.get()), context=ctx)
        f.add_done_callback(lambda fut: VAR.set("set by a callback"))
        VAR.reset(token)
        f.set_result(None)
        await asyncio.sleep(0)
        seen.append(VAR.get())  # a callback's change stays in its own copy
        return seen

    assert _run(kind, body) == ["when added", "given", "unset"]


def test_remove_done_callback_counts_what_it_removed(kind: str) -> None:
    async def body(m: _Made) -> List[str]:
        calls: List[str] = []

        def removed(fut: Any) -> None:
            calls.append("removed")

        f = m.new()
        f.add_done_callback(removed)
        f.add_done_callback(lambda fut: calls.append("kept"))
        f.add_done_callback(removed)
        f.add_done_callback(lambda fut: calls.append("kept too"))
        assert f.remove_done_callback(removed) == 2
        assert f.remove_done_callback(removed) == 0
        f.set_result(None)
        await asyncio.sleep(0)
        return calls

    assert _run(kind, body) == ["kept", "kept too"]


def test_await_returns_at_once_when_done_else_yields_the_future(kind: str) -> None:
    async def body(m: _Made) -> None:
        done = m.new()
        done.set_result("now")
        it = done.__await__()
        with pytest.raises(StopIteration) as stopped:
            next(it)  # no yield: the result at once
        assert stopped.value.value == "now"
        assert list(iter(done)) == []  # __iter__ is __await__
        pending = m.new()
        it = pending.__await__()
        assert next(it) is pending and pending._asyncio_future_blocking is True
        with pytest.raises(RuntimeError, match="await wasn't used with future"):
            next(it)  # resumed while still pending
        pending._asyncio_future_blocking = False
        pending.set_result(5)
        assert await pending == 5

    _run(kind, body)


def test_a_cancelled_task_cancels_the_future_it_awaits_with_the_message(kind: str) -> None:
    async def body(m: _Made) -> None:
        f = m.new()
        task = asyncio.create_task(_await(f))
        await asyncio.sleep(0)
        assert f._asyncio_future_blocking is False  # the task took it and cleared the flag
        task.cancel("stop waiting")
        with pytest.raises(asyncio.CancelledError):
            await task
        assert f.cancelled()
        with pytest.raises(asyncio.CancelledError) as raised:
            f.result()
        assert raised.value.args == ("stop waiting",)
        # a task awaiting one that completes gets its result
        g = m.new()
        task = asyncio.create_task(_await(g))
        await asyncio.sleep(0)
        g.set_result("r")
        assert await task == "r"

    _run(kind, body)


def test_gather_with_and_without_return_exceptions(kind: str) -> None:
    async def body(m: _Made) -> None:
        ok, failed, cancelled = m.new(), m.new(), m.new()
        gathered = asyncio.gather(ok, failed, cancelled, return_exceptions=True)
        error = ValueError("failed")
        ok.set_result(1)
        failed.set_exception(error)
        cancelled.cancel("why")
        results = await gathered
        assert results[:2] == [1, error]
        assert type(results[2]) is asyncio.CancelledError and results[2].args == ("why",)
        with pytest.raises(ValueError):
            await asyncio.gather(ok, failed)
        with pytest.raises(asyncio.CancelledError):
            await asyncio.gather(ok, cancelled)
        a, b = m.new(), m.new()
        both = asyncio.gather(a, b)
        b.set_result("b")
        a.set_result("a")
        assert await both == ["a", "b"]

    _run(kind, body)


def test_wait_for_times_out_and_cancels_the_future(kind: str) -> None:
    async def body(m: _Made) -> None:
        late = m.new()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(late, 0.01)
        assert late.cancelled()
        in_time = m.new()
        m.loop.call_later(0.01, in_time.set_result, "in time")
        assert await asyncio.wait_for(in_time, 5) == "in time"

    _run(kind, body)


def test_shield_keeps_the_future_from_its_awaiters_cancellation(kind: str) -> None:
    async def body(m: _Made) -> None:
        f = m.new()
        outer = asyncio.shield(f)
        outer.cancel()
        await asyncio.sleep(0)
        assert not f.cancelled()
        f.set_result("shielded")
        await asyncio.sleep(0)
        assert await f == "shielded" and outer.cancelled()
        g = m.new()
        shielded = asyncio.shield(g)
        g.set_result(2)
        assert await shielded == 2
        assert asyncio.shield(g) is g  # done: returned as is

    _run(kind, body)


def test_wait_as_completed_wrap_future_and_ensure_future(kind: str) -> None:
    async def body(m: _Made) -> None:
        first, second = m.new(), m.new()
        assert asyncio.wrap_future(first) is first and asyncio.ensure_future(first) is first
        first.set_result(1)
        done, pending = await asyncio.wait({first, second}, return_when=asyncio.FIRST_COMPLETED)
        assert done == {first} and pending == {second}
        m.loop.call_soon(second.set_result, 2)
        assert sorted([await f for f in asyncio.as_completed([first, second])]) == [1, 2]
        done, pending = await asyncio.wait({first, second})
        assert done == {first, second} and not pending

    _run(kind, body)


def test_run_until_complete_takes_the_future(kind: str) -> None:
    loop = asyncio.new_event_loop()
    try:
        m = _Made(kind, loop)
        f = m.new()
        loop.call_soon(f.set_result, "done")
        assert loop.run_until_complete(f) == "done"
        g = m.new()
        loop.call_soon(g.set_exception, KeyError("k"))
        with pytest.raises(KeyError):
            loop.run_until_complete(g)
    finally:
        loop.close()


def test_an_exception_never_retrieved_is_reported_when_the_future_is_destroyed(
    kind: str,
) -> None:
    async def body(m: _Made) -> List[Dict[str, Any]]:
        reported: List[Dict[str, Any]] = []
        m.loop.set_exception_handler(lambda _loop, context: reported.append(context))
        error = ValueError("nobody looked")
        f = m.new()
        f.set_exception(error)
        retrieved = m.new()
        retrieved.set_exception(KeyError())
        retrieved.exception()
        cancelled = m.new()
        cancelled.cancel()
        m.deliveries.clear()
        del f, retrieved, cancelled
        gc.collect()
        assert [c["message"] for c in reported] == ["Future exception was never retrieved"]
        assert reported[0]["exception"] is error
        return reported

    _run(kind, body)


def test_record_futures_leave_the_gcs_lists_until_they_fail_or_are_cancelled() -> None:
    """See completions.pyx: a pending or successful record future is untracked, a failed or
    cancelled one (or one given a result by anyone but its delivery) is tracked."""

    async def main() -> None:
        p = Ours(asyncio.get_running_loop())
        ok, failed, cancelled, set_by_hand = p.new(), p.new(), p.new(), p.new()
        assert not any(gc.is_tracked(f) for f in (ok, failed, cancelled, set_by_hand))
        cancelled.cancel()
        set_by_hand.set_result([])
        assert gc.is_tracked(cancelled) and gc.is_tracked(set_by_hand)
        _from_thread(lambda: (p.complete(ok, 1), p.complete(failed, -1), p.complete(cancelled, 2)))
        await asyncio.sleep(0.05)
        assert ok.result().offset == 1 and not gc.is_tracked(ok)
        assert gc.is_tracked(failed) and type(failed.exception()) is aio_errors.KafkaTimeoutError
        assert cancelled.cancelled()

    asyncio.run(main())
