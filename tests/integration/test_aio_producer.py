"""aiokafka's documented producer usage, run with the import switched to ``cproducer.aio``.

Every scenario is aiokafka's own (its README, its producer guide, its batch, serialization and
transaction examples) against the real broker (Tansu), and what was written is read back with
librdkafka (``Consumer.assign``). Each test runs twice: on ``cproducer.aio`` and on aiokafka
itself, so the behaviour asserted is aiokafka's, not ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import json
import random
import time
import types
import uuid
from typing import Any, Callable, Dict, Iterator, List

import pytest
from aiokafka.abc import AbstractTokenProvider

from cproducer.localbroker import LocalBroker, free_port
from cproducer.utils.murmur2 import partition_for_key
from tests.integration.readback import (
    ConsumedRecord,
    assert_delivered,
    by_partition,
    committed,
    read_back,
)
from tests.integration.test_sasl import PASSWORD, librdkafka_settings, sasl_cluster, unsecured_jwt
from tests.tools.virtual_cluster import VirtualCluster

PEERS = ["cproducer.aio", "aiokafka"]


def _peer(name: str) -> types.SimpleNamespace:
    module = importlib.import_module(name)
    return types.SimpleNamespace(
        name=name,
        AIOKafkaProducer=module.AIOKafkaProducer,
        errors=importlib.import_module(f"{name}.errors"),
        TopicPartition=(
            module.TopicPartition
            if name == "cproducer.aio"
            else importlib.import_module("aiokafka.structs").TopicPartition
        ),
    )


@pytest.fixture(params=PEERS)
def peer(request: pytest.FixtureRequest) -> types.SimpleNamespace:
    return _peer(request.param)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ------------------------------------------------------------------ README and producer guide


def test_readme_send_and_wait(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """README: start, send_and_wait, stop; the RecordMetadata says where the record landed."""
    topic = new_topic(1)

    async def send_one() -> Any:
        producer = peer.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        await producer.start()
        try:
            return await producer.send_and_wait(topic, b"Super message")
        finally:
            await producer.stop()

    before = int(time.time() * 1000)
    md = run(send_one())
    (record,) = read_back(broker.bootstrap_servers, topic, 1, 1)
    assert record.value == b"Super message" and record.key is None
    assert (md.topic, md.partition, md.offset) == (topic, 0, record.offset)
    assert tuple(md.topic_partition) == (topic, 0)
    assert md.timestamp_type == 0  # CreateTime: the timestamp is the producer's
    assert md.timestamp == record.timestamp and before <= md.timestamp <= before + 60_000


def test_send_returns_a_future_to_await_later(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """Producer guide, message buffering: ``fut = await producer.send(..., partition=1)``, then
    ``await fut``; the future is an asyncio future."""
    topic = new_topic(3)

    async def scenario() -> List[Any]:
        async with peer.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            futures = [
                await producer.send(topic, b"Super message %d" % i, partition=1) for i in range(5)
            ]
            assert all(asyncio.isfuture(f) for f in futures)
            return [await f for f in futures]

    metas = run(scenario())
    assert [m.partition for m in metas] == [1] * 5
    assert [m.offset for m in metas] == list(range(5))
    records = read_back(broker.bootstrap_servers, topic, 3, 5)
    assert [(r.partition, r.offset, r.value) for r in records] == [
        (1, i, b"Super message %d" % i) for i in range(5)
    ]


def test_send_is_a_coroutine_that_does_nothing_until_awaited(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """``send`` is an ``async def`` in aiokafka: calling it gives a coroutine, which sends
    nothing until awaited (Python warns when one is dropped unawaited), runs as a task, and takes
    ``close`` and ``throw`` as a coroutine that has not started."""
    topic = new_topic(1)

    async def scenario() -> Any:
        async with peer.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            assert asyncio.iscoroutinefunction(producer.send)
            dropped = producer.send(topic, b"dropped")
            assert asyncio.iscoroutine(dropped)
            with pytest.warns(RuntimeWarning, match="'AIOKafkaProducer.send' was never awaited"):
                del dropped
                gc.collect()
            producer.send(topic, b"closed").close()
            thrown = producer.send(topic, b"thrown")
            with pytest.raises(ValueError, match="into the coroutine"):
                thrown.throw(ValueError("into the coroutine"))
            task = asyncio.create_task(producer.send(topic, b"as a task"))
            first = await (await task)
            second = await (await producer.send(topic, b"awaited"))
            return first, second

    first, second = run(scenario())
    assert (first.offset, second.offset) == (0, 1)
    records = read_back(broker.bootstrap_servers, topic, 1, 2)
    assert [r.value for r in records] == [b"as a task", b"awaited"]


def test_keys_go_to_their_murmur2_partition_and_no_key_to_a_random_one(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """aiokafka's DefaultPartitioner: a key's partition is murmur2 (as in Java); a record
    without a key goes to a random partition, record by record (not sticky)."""
    topic = new_topic(3)
    keys = [b"user-%d" % i for i in range(300)]

    async def scenario() -> List[Any]:
        async with peer.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            keyed = [await producer.send(topic, b"k%d" % i, key=k) for i, k in enumerate(keys)]
            unkeyed = [await producer.send(topic, b"u%d" % i) for i in range(600)]
            return [await f for f in keyed] + [await f for f in unkeyed]

    metas = run(scenario())
    assert [m.partition for m in metas[:300]] == [partition_for_key(k, 3) for k in keys]
    unkeyed = [m.partition for m in metas[300:]]
    assert set(unkeyed) == {0, 1, 2}
    switches = sum(1 for a, b in zip(unkeyed, unkeyed[1:]) if a != b)
    assert switches > 250  # about 400 for a random choice per record; a sticky one: a few
    records = read_back(broker.bootstrap_servers, topic, 3, 900)
    sent = [b"k%d" % i for i in range(300)] + [b"u%d" % i for i in range(600)]
    assert_delivered(records, sent, partitions=[m.partition for m in metas])
    by_value_key = {(r.partition, r.offset): r for r in records}
    assert all(by_value_key[(m.partition, m.offset)].key == k for m, k in zip(metas, keys))


def test_headers_and_timestamps(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    stamp = 1_600_000_000_123

    async def scenario() -> Any:
        async with peer.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            return await producer.send_and_wait(
                topic,
                b"v",
                key=b"k",
                timestamp_ms=stamp,
                headers=[("trace", b"abc"), ("empty", None)],
            )

    md = run(scenario())
    assert md.timestamp == stamp
    (record,) = read_back(broker.bootstrap_servers, topic, 1, 1)
    assert record.timestamp == stamp
    assert record.headers == [("trace", b"abc"), ("empty", None)]


def test_serializers_and_compression(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """The serialization and compression example: a JSON value serializer, gzip."""
    topic = new_topic(1)

    def serializer(value: Any) -> bytes:
        return json.dumps(value).encode()

    async def produce() -> None:
        producer = peer.AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers,
            value_serializer=serializer,
            key_serializer=lambda k: k.encode(),
            compression_type="gzip",
        )
        await producer.start()
        data = {"a": 123.4, "b": "some string"}
        await producer.send(topic, data, key="first")
        data2 = [1, 2, 3, 4]
        await producer.send(topic, data2, key="second")
        await producer.stop()

    run(produce())
    records = read_back(broker.bootstrap_servers, topic, 1, 2)
    assert [(r.key, json.loads(r.value)) for r in records] == [
        (b"first", {"a": 123.4, "b": "some string"}),
        (b"second", [1, 2, 3, 4]),
    ]


def test_flush_resolves_every_future_and_stop_sends_the_rest(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)

    async def scenario() -> None:
        producer = peer.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=200)
        await producer.start()
        try:
            futures = [await producer.send(topic, b"%d" % i) for i in range(2000)]
            await producer.flush()
            assert all(f.done() for f in futures)
            assert not any(f.exception() for f in futures)
            late = [await producer.send(topic, b"late%d" % i) for i in range(10)]
        finally:
            await producer.stop()
        assert all(f.done() and f.exception() is None for f in late)

    run(scenario())
    records = read_back(broker.bootstrap_servers, topic, 2, 2010)
    assert_delivered(records, [b"%d" % i for i in range(2000)] + [b"late%d" % i for i in range(10)])


def test_a_cancelled_future_does_not_stop_its_record(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """The guide: 'Cancelling this future will not cancel the send.'"""
    topic = new_topic(1)

    async def scenario() -> None:
        async with peer.AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers, linger_ms=100
        ) as producer:
            future = await producer.send(topic, b"still sent")
            future.cancel()
            await producer.flush()

    run(scenario())
    assert [r.value for r in read_back(broker.bootstrap_servers, topic, 1, 1)] == [b"still sent"]


def test_acks_0_resolves_to_none(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)

    async def scenario() -> List[Any]:
        async with peer.AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers, acks=0
        ) as producer:
            return [await producer.send_and_wait(topic, b"%d" % i) for i in range(3)]

    assert run(scenario()) == [None, None, None]  # there is no offset to report
    # acks=0: nothing says a record arrived (aiokafka may close the connection before the
    # broker read the last one), but the records are sent
    records = read_back(broker.bootstrap_servers, topic, 1, 3)
    assert records[0].value == b"0"
    assert_delivered(records, [b"0", b"1", b"2"], may_be_missing=[b"1", b"2"])


def test_partitions_for(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(4)

    async def scenario() -> Any:
        async with peer.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            return await producer.partitions_for(topic)

    assert run(scenario()) == {0, 1, 2, 3}


# ------------------------------------------------------------------ batches


def test_batch_produce_example(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """The batch producer example: fill a batch until append returns None, send it to a random
    partition, start a new one; every record lands, in batch order, the batch's future giving
    its first record's offset."""
    topic = new_topic(3)
    num = 1000

    async def send_many() -> List[Any]:
        producer = peer.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        await producer.start()
        sent = []  # (partition, record_count, future)
        batch = producer.create_batch()
        i = 0
        while i < num:
            msg = ("Test message %d" % i).encode("utf-8")  # noqa: UP031 - the example's line
            metadata = batch.append(key=None, value=msg, timestamp=None)
            if metadata is None:
                partitions = await producer.partitions_for(topic)
                partition = random.choice(tuple(partitions))
                fut = await producer.send_batch(batch, topic, partition=partition)
                sent.append((partition, batch.record_count(), fut))
                batch = producer.create_batch()
                continue
            assert metadata.offset == batch.record_count() - 1
            i += 1
        partitions = await producer.partitions_for(topic)
        partition = random.choice(tuple(partitions))
        fut = await producer.send_batch(batch, topic, partition=partition)
        sent.append((partition, batch.record_count(), fut))
        results = [(p, n, await f) for p, n, f in sent]
        await producer.stop()
        return results

    results = run(send_many())
    # a batch holds up to 16 KiB: 687 of these records, the rest go in the second
    assert [n for _p, n, _md in results] == [687, num - 687]
    records = read_back(broker.bootstrap_servers, topic, 3, num)
    assert_delivered(
        records,
        [b"Test message %d" % i for i in range(num)],
        partitions=[p for p, n, _md in results for _ in range(n)],
    )
    at = {(r.partition, r.offset): r.value for r in records}
    first = 0
    for partition, count, md in results:
        assert (md.topic, md.partition) == (topic, partition)
        assert [at[(partition, md.offset + j)] for j in range(count)] == [
            b"Test message %d" % (first + j) for j in range(count)
        ]
        first += count


def test_send_batch_to_a_partition_the_topic_lacks(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)

    async def scenario() -> None:
        async with peer.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            batch = producer.create_batch()
            batch.append(key=None, value=b"x", timestamp=None)
            with pytest.raises(AssertionError):
                await producer.send_batch(batch, topic, partition=5)
            # partition=None: the partitioner picks one, as for a record without a key
            md = await (await producer.send_batch(batch, topic, partition=None))
            assert (md.partition, md.offset) == (0, 0)

    run(scenario())
    assert [r.value for r in read_back(broker.bootstrap_servers, topic, 1, 1)] == [b"x"]


# ------------------------------------------------------------------ errors


def test_errors_of_send(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    errors = peer.errors

    async def scenario() -> None:
        producer = peer.AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers, max_request_size=10_000
        )
        await producer.start()
        with pytest.raises(errors.MessageSizeTooLargeError) as too_large:
            await producer.send(topic, b"x" * 20_000)
        assert isinstance(too_large.value, errors.BrokerResponseError)
        assert isinstance(too_large.value, errors.KafkaError)
        assert too_large.value.errno == 10
        with pytest.raises(AssertionError):
            await producer.send(topic, b"x", partition=7)  # the topic has 2
        with pytest.raises(AssertionError):
            await producer.send(topic)  # neither key nor value
        with pytest.raises(TypeError):
            await producer.send(topic, "not bytes")
        with pytest.raises(errors.IllegalOperation):
            await producer.begin_transaction()  # no transactional_id
        await producer.send_and_wait(topic, b"fine")
        await producer.stop()
        with pytest.raises(errors.ProducerClosed):
            await producer.send(topic, b"after stop")
        await producer.stop()  # twice is fine

    run(scenario())
    assert [r.value for r in read_back(broker.bootstrap_servers, topic, 2, 1)] == [b"fine"]


def test_no_broker_to_bootstrap_from(peer: types.SimpleNamespace) -> None:
    async def scenario() -> None:
        producer = peer.AIOKafkaProducer(
            bootstrap_servers=f"127.0.0.1:{free_port()}", request_timeout_ms=1000
        )
        with pytest.raises(peer.errors.KafkaConnectionError):
            await producer.start()
        await producer.stop()

    run(scenario())


# ------------------------------------------------------------------ transactions
#
# aiokafka speaks InitProducerId v0 only, which Tansu answers with UNKNOWN_SERVER_ERROR (it
# serves v3+): both peers reach the broker through the test proxy, which sends that request at
# v3 and answers it back at v0.


@contextlib.contextmanager
def _transactional_front(broker: LocalBroker) -> Iterator[str]:
    with VirtualCluster(broker.bootstrap_servers, 1) as vc:
        vc.raise_init_producer_id_version(3)
        yield vc.bootstrap_servers


def test_idempotent_produce_example(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """The guide's idempotent producer: ``enable_idempotence=True``, acks=all taken."""
    topic = new_topic(2)

    async def scenario(bootstrap: str) -> List[Any]:
        producer = peer.AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
        await producer.start()
        try:
            first = await producer.send_and_wait(topic, b"Super message")
            futures = [await producer.send(topic, b"%d" % i, key=b"%d" % i) for i in range(500)]
            return [first, *[await f for f in futures]]
        finally:
            await producer.stop()

    with _transactional_front(broker) as bootstrap:
        metas = run(scenario(bootstrap))
    records = read_back(broker.bootstrap_servers, topic, 2, 501)
    assert len(records) == 501  # each once
    sent = [b"Super message"] + [b"%d" % i for i in range(500)]
    assert_delivered(records, sent, partitions=[m.partition for m in metas])
    at = {(r.partition, r.offset): r.value for r in records}
    assert [at[(m.partition, m.offset)] for m in metas[1:]] == [b"%d" % i for i in range(500)]


def test_transaction_example(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """The guide's transactional producer: ``async with producer.transaction()`` commits when the
    block ends; a block that raises aborts, the exception goes on, and the producer can run the
    next transaction; ``send`` outside a transaction is refused."""
    topic = new_topic(2)
    tid = f"aio-txn-{peer.name}-{time.time_ns()}"

    async def scenario(bootstrap: str) -> List[Any]:
        producer = peer.AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
        await producer.start()
        try:
            async with producer.transaction():
                res = await producer.send_and_wait(topic, b"Super transactional message")
                more = [await producer.send(topic, b"m%d" % i, key=b"%d" % i) for i in range(50)]
            with pytest.raises(ValueError, match="stop here"):
                async with producer.transaction():
                    aborted = await producer.send(topic, b"aborted", partition=0)
                    raise ValueError("stop here")
            # sent before the abort (its future succeeds), then marked aborted
            assert (await aborted).partition == 0
            with pytest.raises(peer.errors.IllegalOperation):
                await producer.send(topic, b"outside")
            await producer.begin_transaction()
            last = await producer.send_and_wait(topic, b"after", partition=0)
            await producer.commit_transaction()
        finally:
            await producer.stop()
        return [res, *[f.result() for f in more], last]

    with _transactional_front(broker) as bootstrap:
        metas = run(scenario(bootstrap))
    records = read_back(broker.bootstrap_servers, topic, 2, 53)
    sent = [b"Super transactional message", *(b"m%d" % i for i in range(50)), b"aborted", b"after"]
    partitions = [m.partition for m in metas[:-1]] + [0, metas[-1].partition]
    assert_delivered(records, sent, partitions=partitions, may_be_missing=[b"aborted"])
    values = {r.value for r in records}
    assert {b"Super transactional message", b"after"} <= values
    assert {b"m%d" % i for i in range(50)} <= values
    assert b"outside" not in values
    # partition 0: the first transaction's records, its commit marker, the aborted record and its
    # abort marker, then "after"
    first_txn_p0 = [m for m in metas[:-1] if m.partition == 0]
    assert metas[-1].offset == len(first_txn_p0) + 3


def test_consume_transform_produce_offsets(
    peer: types.SimpleNamespace, broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """send_offsets_to_transaction: the consumer's offsets count if and only if the transaction
    commits (read with librdkafka's committed(): while the transaction is open as a
    read_uncommitted consumer asks, as Apache Kafka holds a read_committed consumer's question
    until the transaction ends). Tansu applies the offsets of a producer's first transaction
    only, so each case is the first transaction of its own producer and group."""
    source, sink = new_topic(1), new_topic(1)
    stamp = f"{peer.name}-{time.time_ns()}"
    tp = peer.TopicPartition(source, 0)
    bs = broker.bootstrap_servers

    async def scenario(bootstrap: str) -> None:
        async with peer.AIOKafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=f"aio-ctp-1-{stamp}"
        ) as producer:
            async with producer.transaction():
                await producer.send(sink, b"processed 0-9")
                await producer.send_offsets_to_transaction({tp: 10}, f"group-1-{stamp}")
                assert committed(bs, f"group-1-{stamp}", source, stable=False) is None
            assert committed(bs, f"group-1-{stamp}", source) == 10
            with pytest.raises(peer.errors.IllegalOperation):
                await producer.send_offsets_to_transaction({tp: 30}, f"group-1-{stamp}")
        async with peer.AIOKafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=f"aio-ctp-2-{stamp}"
        ) as producer:
            with pytest.raises(RuntimeError):
                async with producer.transaction():
                    with pytest.raises(TypeError):
                        await producer.send_offsets_to_transaction({(1, 2): 30}, "g")
                    with pytest.raises(ValueError):
                        await producer.send_offsets_to_transaction({}, "g")
                    with pytest.raises(ValueError):
                        await producer.send_offsets_to_transaction({tp: 30}, "")
                    await producer.send_offsets_to_transaction(
                        {tp: (20, "meta")}, f"group-2-{stamp}"
                    )
                    raise RuntimeError("processing failed")
            assert committed(bs, f"group-2-{stamp}", source) is None  # aborted: never

    with _transactional_front(broker) as bootstrap:
        run(scenario(bootstrap))
    assert [r.value for r in read_back(broker.bootstrap_servers, sink, 1, 1)] == [b"processed 0-9"]


def test_transaction_calls_need_a_transactional_id(
    peer: types.SimpleNamespace, broker: LocalBroker
) -> None:
    async def scenario() -> None:
        async with peer.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            for call in (
                producer.begin_transaction,
                producer.commit_transaction,
                producer.abort_transaction,
            ):
                with pytest.raises(peer.errors.IllegalOperation):
                    await call()
            with pytest.raises(peer.errors.IllegalOperation):
                await producer.send_offsets_to_transaction({("t", 0): 1}, "g")

    run(scenario())


# ------------------------------------------------------------------ SASL


class _UnsecuredJwtProvider(AbstractTokenProvider):
    """aiokafka's token provider shape: an async token()."""

    async def token(self) -> str:
        await asyncio.sleep(0)
        return unsecured_jwt("alice", 300)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_sasl(peer: types.SimpleNamespace, mechanism: str) -> None:
    """SASL_PLAINTEXT through the SASL front (tests/tools/sasl_front.py) in front of Tansu, with
    aiokafka's settings: every mechanism the engine has, OAUTHBEARER with aiokafka's async token
    provider; a wrong password fails start() with KafkaConnectionError."""
    settings: Dict[str, Any] = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism}
    if mechanism == "OAUTHBEARER":
        settings["sasl_oauth_token_provider"] = _UnsecuredJwtProvider()
    else:
        settings.update(sasl_plain_username="alice", sasl_plain_password=PASSWORD)

    async def scenario(front: Any, topic: str) -> List[Any]:
        async with peer.AIOKafkaProducer(
            bootstrap_servers=front.bootstrap_servers, **settings
        ) as producer:
            futures = [await producer.send(topic, b"v%d" % i, key=b"%d" % i) for i in range(100)]
            metas = [await f for f in futures]
        if mechanism != "OAUTHBEARER":
            wrong = peer.AIOKafkaProducer(
                bootstrap_servers=front.bootstrap_servers,
                request_timeout_ms=5000,
                **{**settings, "sasl_plain_password": "wrong"},
            )
            with pytest.raises(peer.errors.KafkaConnectionError):
                await wrong.start()
            await wrong.stop()
        return metas

    with sasl_cluster() as (broker, front):
        topic = f"aio-sasl-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, 2)
        metas = run(scenario(front, topic))
        records = read_back(
            front.bootstrap_servers, topic, 2, 100, config=librdkafka_settings(front)
        )
    sent = [b"v%d" % i for i in range(100)]
    assert_delivered(records, sent, partitions=[m.partition for m in metas])
    at = {(r.partition, r.offset): r.value for r in records}
    assert [at[(m.partition, m.offset)] for m in metas] == [b"v%d" % i for i in range(100)]


# ------------------------------------------------------------------ the loop keeps running


def test_a_send_waiting_for_buffer_space_does_not_block_the_loop(
    peer: types.SimpleNamespace, broker: LocalBroker
) -> None:
    """The broker's answers are held 3 s, so the producer's buffer fills (aiokafka: one batch
    per partition; cproducer: buffer.memory's 32 MiB of 900 kB records) and a send waits for
    room. While it waits, another task keeps ticking: the wait is asynchronous. Every record
    still lands, in order."""
    topic = f"aio-full-{peer.name.replace('.', '-')}-{time.time_ns()}"
    broker.create_topic(topic, 1)
    big = b"x" * 900_000
    n = 45

    async def scenario(bootstrap: str) -> int:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                await asyncio.sleep(0.01)
                ticks += 1

        async with peer.AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
            await producer.partitions_for(topic)
            ticking = asyncio.ensure_future(ticker())
            most_ticks_in_one_send = 0
            futures = []
            for i in range(n):
                before = ticks
                futures.append(await producer.send(topic, big, key=b"%d" % i))
                most_ticks_in_one_send = max(most_ticks_in_one_send, ticks - before)
            await asyncio.gather(*futures)
            stop.set()
            await ticking
        return most_ticks_in_one_send

    with VirtualCluster(broker.bootstrap_servers, 1) as vc:
        vc.delay_produce_answers(0, 3000, count=1)
        most = run(scenario(vc.bootstrap_servers))
    assert most >= 10, f"no send waited while the loop ran (at most {most} ticks in one send)"
    records = read_back(broker.bootstrap_servers, topic, 1, n, timeout_s=60)
    assert [int(r.key) for r in records] == list(range(n))  # once each, in send order


# ------------------------------------------------------------------ cproducer.aio's own


def test_a_fenced_producer_raises_producer_fenced(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """A second producer with the same transactional_id fences the first: its records, its commit
    and its next transaction raise ProducerFenced, and ``transaction()`` does not try to abort
    (a fatal error). Apache Kafka answers the zombie's Produce INVALID_PRODUCER_EPOCH (KIP-588),
    which aiokafka takes as fenced (the engine, as Java, as abortable: the facade keeps
    aiokafka's rule). (aiokafka itself on Tansu: the zombie's produce is answered
    UNKNOWN_SERVER_ERROR and its commit never returns; on Apache Kafka its record and commit
    raise ProducerFenced, then ``transaction()`` fails an assertion of its own: so this runs on
    cproducer.aio only.)"""
    from cproducer.aio import AIOKafkaProducer, errors

    topic = new_topic(1)
    tid = f"aio-fence-{time.time_ns()}"

    async def scenario() -> None:
        first = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=tid)
        second = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=tid)
        await first.start()
        await first.begin_transaction()
        await first.send_and_wait(topic, b"one")
        await second.start()  # bumps the epoch: the first is a zombie now
        zombie = await first.send(topic, b"zombie")
        with pytest.raises(errors.ProducerFenced):
            await zombie
        with pytest.raises(errors.ProducerFenced):
            await first.commit_transaction()
        with pytest.raises(errors.ProducerFenced):
            async with first.transaction():
                pass
        async with second.transaction():
            await second.send(topic, b"two")
        await second.stop()
        await first.stop()

    run(scenario())
    values = [r.value for r in read_back(broker.bootstrap_servers, topic, 1, 2)]
    assert b"two" in values and b"zombie" not in values


def test_completions_reach_the_loop_a_batch_at_a_time(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    """The engine completes records on its I/O thread; the loop resolves them a batch at a time:
    each drain is one call_soon_threadsafe from that thread (when the loop may be waiting) or
    one call_soon queued by the send path while the loop runs, never one per record."""
    from cproducer.aio import AIOKafkaProducer, RecordMetadata

    topic = new_topic(3)
    n = 20_000
    wakeups: List[Any] = []
    queued: List[Any] = []

    async def scenario() -> Dict[str, int]:
        loop = asyncio.get_running_loop()
        call_soon_threadsafe = loop.call_soon_threadsafe
        call_soon = loop.call_soon

        def counting(callback: Any, *args: Any, **kwargs: Any) -> Any:
            wakeups.append(callback)
            return call_soon_threadsafe(callback, *args, **kwargs)

        def counting_queued(callback: Any, *args: Any, **kwargs: Any) -> Any:
            queued.append(callback)
            return call_soon(callback, *args, **kwargs)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
        loop.call_soon = counting_queued  # type: ignore[method-assign]
        async with AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers, linger_ms=20
        ) as producer:
            futures = [await producer.send(topic, b"%05d" % i, key=b"%d" % i) for i in range(n)]
            metas = await asyncio.gather(*futures)
            assert sorted(m.offset for m in metas)[-1] < n
            # the futures stay out of the GC's lists (see completions.pyx)
            assert not any(gc.is_tracked(f) for f in futures)
            # aiokafka's named tuple, made in C: a real tuple, out of the GC's lists (its
            # TopicPartition is the engine's, one per batch)
            md = metas[0]
            assert md == tuple(md) and md._asdict()["offset"] == md.offset == md[3]
            assert type(md) is RecordMetadata and md.topic_partition == (topic, md.partition)
            assert not gc.is_tracked(md)
            engine_metrics = producer._engine._sender.metrics
            return {"batches": engine_metrics.batches_sent, "records": engine_metrics.records_sent}

    sent = run(scenario())
    drains = [cb for cb in wakeups if getattr(cb, "__name__", "") == "drain"]
    loop_drains = [cb for cb in queued if getattr(cb, "__name__", "") == "_queued_drain"]
    assert sent["records"] == n
    assert sent["batches"] < n / 50  # 16 KiB batches of these records
    # the sends ran without a pause: one drain queued by them (it takes whatever completed while
    # they ran), then at most one wake-up per batch completed after them
    assert len(loop_drains) == 1, len(loop_drains)
    assert len(drains) <= sent["batches"], (len(drains), sent)
    records = read_back(broker.bootstrap_servers, topic, 3, n)
    assert_delivered(records, [b"%05d" % i for i in range(n)])


def test_new_batches_do_not_wake_the_io_thread_while_its_one_request_is_in_flight(
    broker: LocalBroker,
) -> None:
    """aiokafka's rule, one Produce request in flight per broker: while it is out, the I/O thread
    can send nothing new, so a batch made or filled by a send does not wake it (each wake-up cost
    two GIL hand-overs for nothing); the answer does, and the next request takes the batches.
    The same sends with the muting turned off wake it for most of their batches: that is what
    is saved. Every record lands once, in send order per partition."""
    from cproducer.aio import AIOKafkaProducer

    topic = f"aio-mute-{time.time_ns()}"
    broker.create_topic(topic, 6)
    n = 1200

    # 16 to a 16 KiB batch: about 75 batches; each names its round and place in it
    def value(mute: bool, i: int) -> bytes:
        return (b"%d:%d:" % (mute, i)).ljust(1000, b"v")

    async def scenario(bootstrap: str, mute: bool) -> int:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0) as producer:
            await producer.partitions_for(topic)
            engine = producer._engine
            assert engine is not None
            client, sender = engine._sender.client, engine._sender
            if not mute:
                sender._mute_data_wakeups = None
            drains = 0
            drain_wakeup = client._drain_wakeup

            def counting() -> None:
                nonlocal drains
                drains += 1
                drain_wakeup()

            client._drain_wakeup = counting
            futures = []
            for i in range(n):
                futures.append(await producer.send(topic, value(mute, i), key=b"%d" % i))
                if i % 40 == 39:
                    await asyncio.sleep(0.01)  # the loop waits: the I/O thread is in select
            await asyncio.gather(*futures)
            return drains

    with VirtualCluster(broker.bootstrap_servers, 1) as vc:
        vc.set_produce_service_ms(0, 20)
        unmuted = run(scenario(vc.bootstrap_servers, False))
        muted = run(scenario(vc.bootstrap_servers, True))
    assert unmuted >= 20, unmuted  # about one per pause (30)
    assert muted <= 3, (muted, unmuted)
    records = read_back(broker.bootstrap_servers, topic, 6, 2 * n)
    # the rounds ran one after the other: the muted round's records follow the unmuted one's
    assert_delivered(records, [value(mute, i) for mute in (False, True) for i in range(n)])
    assert sorted(int(r.key) for r in records) == sorted(list(range(n)) * 2)


def test_a_failed_record_makes_the_commit_raise_its_error(broker: LocalBroker) -> None:
    """A record of the transaction fails (the proxy answers its Produce request
    TOPIC_AUTHORIZATION_FAILED): its future raises that error, so does the commit (the engine
    will not commit a transaction that lost a record, as Java; aiokafka would commit the rest),
    the abort works and the next transaction commits."""
    from cproducer.aio import AIOKafkaProducer, errors

    topic = f"aio-txn-fail-{time.time_ns()}"
    broker.create_topic(topic, 1)

    async def scenario(vc: VirtualCluster) -> Any:
        async with AIOKafkaProducer(
            bootstrap_servers=vc.bootstrap_servers, transactional_id=f"aio-fail-{time.time_ns()}"
        ) as producer:
            vc.inject_produce_errors(0, 29, count=1)
            await producer.begin_transaction()
            doomed = await producer.send(topic, b"doomed")
            with pytest.raises(errors.TopicAuthorizationFailedError):
                await doomed
            assert gc.is_tracked(doomed)  # a failed future is back in the GC's lists
            with pytest.raises(errors.TopicAuthorizationFailedError):
                await producer.commit_transaction()
            with pytest.raises(errors.IllegalOperation):
                await producer.send(topic, b"not in a transaction any more")
            await producer.abort_transaction()
            async with producer.transaction():
                return await producer.send_and_wait(topic, b"next")

    with VirtualCluster(broker.bootstrap_servers, 1) as vc:
        vc.bump_epochs_by_init()  # the engine bumps the epoch after the abort, as Java 4.x
        md = run(scenario(vc))
        assert vc.injected_answers == 1
    assert md.partition == 0
    values = [r.value for r in read_back(broker.bootstrap_servers, topic, 1, 1)]
    assert values == [b"next"]


def test_user_partitioner_is_called_as_aiokafka_calls_it(
    broker: LocalBroker, new_topic: Callable[..., str]
) -> None:
    from cproducer.aio import AIOKafkaProducer

    topic = new_topic(3)
    calls: List[Any] = []

    def partitioner(key: Any, all_partitions: List[int], available: List[int]) -> int:
        calls.append((key, list(all_partitions), list(available)))
        return all_partitions[-1]

    async def scenario() -> Any:
        async with AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers, partitioner=partitioner
        ) as producer:
            return await producer.send_and_wait(topic, b"v", key=b"k")

    md = run(scenario())
    assert md.partition == 2
    assert calls == [(b"k", [0, 1, 2], [0, 1, 2])]
    records: List[ConsumedRecord] = read_back(broker.bootstrap_servers, topic, 3, 1)
    assert list(by_partition(records)) == [2]
