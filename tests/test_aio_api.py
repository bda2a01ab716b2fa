"""aiokafka's AIOKafkaProducer API without a broker: what aiokafka does is checked on aiokafka
too; what cproducer.aio has not is refused with where to look instead."""

from __future__ import annotations

import asyncio
import gc
import inspect
import warnings
from types import ModuleType
from typing import Any, List

import aiokafka
import aiokafka.producer.message_accumulator
import aiokafka.structs
import pytest

import cproducer.aio
import cproducer.aio.batch_builder
import cproducer.aio.structs

PEERS = pytest.mark.parametrize("impl", [aiokafka, cproducer.aio], ids=["aiokafka", "ours"])


def test_the_methods_take_aiokafkas_parameters() -> None:
    """Every public method of aiokafka's producer and BatchBuilder, with its parameters' names,
    kinds and defaults; RecordMetadata's fields."""

    def default(value: Any) -> Any:
        # a sentinel or a partitioner: the same kind of object, not the same one
        plain = value is None or isinstance(value, (bool, int, float, str, list, tuple))
        return value if plain else type(value).__name__

    def params(fn: Any) -> List[Any]:
        return [
            (p.name, p.kind, default(p.default)) for p in inspect.signature(fn).parameters.values()
        ]

    pairs = [
        (aiokafka.AIOKafkaProducer, cproducer.aio.AIOKafkaProducer, ("__init__", "__aenter__")),
        # (a BatchBuilder is made by create_batch: its constructor is not the API)
        (aiokafka.producer.message_accumulator.BatchBuilder, cproducer.aio.BatchBuilder, ()),
    ]
    for theirs, ours, dunders in pairs:
        names = [n for n in dir(theirs) if not n.startswith("_") or n in dunders]
        for name in names:
            if not callable(getattr(theirs, name)):
                continue
            got, want = params(getattr(ours, name)), params(getattr(theirs, name))
            if name == "append":  # headers' default: () for aiokafka's [] (not shared, same use)
                got, want = got[:-1], want[:-1]
            assert got == want, f"{theirs.__name__}.{name}"
    assert cproducer.aio.RecordMetadata._fields == aiokafka.structs.RecordMetadata._fields


@PEERS
def test_start_from_another_loop_than_the_producers(impl: ModuleType) -> None:
    async def make() -> Any:
        return impl.AIOKafkaProducer(bootstrap_servers="localhost:1")

    producer = asyncio.run(make())
    with pytest.raises(AssertionError, match="same loop as running with"):
        asyncio.run(producer.start())
    producer._closed = True  # (nothing to report when it is dropped)


@PEERS
def test_a_producer_never_stopped_is_reported_when_dropped(impl: ModuleType) -> None:
    handled: List[Any] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _l, ctx: handled.append(ctx))
        producer = impl.AIOKafkaProducer(bootstrap_servers="localhost:1")
        gc.collect()  # what earlier tests left unclosed is reported before, not in, the check
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del producer
            gc.collect()
        assert [w.category for w in caught] == [ResourceWarning], [str(w) for w in caught]
        assert "Unclosed AIOKafkaProducer" in str(caught[0].message)

    asyncio.run(main())
    assert [ctx["message"] for ctx in handled] == ["Unclosed AIOKafkaProducer"]


def test_what_is_not_a_producer_is_refused_with_where_to_look() -> None:
    async def main() -> None:
        producer = cproducer.aio.AIOKafkaProducer(bootstrap_servers="localhost:1")
        try:
            with pytest.raises(AttributeError, match=r"partitions_for\(topic\)"):
                producer.client  # noqa: B018
            assert not hasattr(producer, "client")
        finally:
            await producer.stop()

    asyncio.run(main())
    with pytest.raises(AttributeError, match="consume with aiokafka.AIOKafkaConsumer"):
        cproducer.aio.AIOKafkaConsumer  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        cproducer.aio.nothing  # noqa: B018
    # aiokafka's top-level IllegalOperation is the errors module's
    assert cproducer.aio.IllegalOperation is cproducer.aio.errors.IllegalOperation
    assert aiokafka.IllegalOperation is aiokafka.errors.IllegalOperation
