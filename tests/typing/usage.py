"""Typed use of cproducer's public API: tests/test_typing.py runs mypy (and pyright) on this file
and checks each reveal_type against what it should reveal. Never run: it is only type-checked."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import cproducer
from cproducer import KafkaProducer
from cproducer.aio import AIOKafkaProducer
from cproducer.compat.confluent import Producer

if TYPE_CHECKING:
    from typing_extensions import reveal_type


def use_producer() -> None:
    reveal_type(cproducer.KafkaProducer)  # reveal: KafkaProducer
    producer = KafkaProducer(
        bootstrap_servers=["localhost:9092"],
        linger_ms=5,
        acks="all",
        compression_type="zstd",
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        sasl_plain_username="user",
        sasl_plain_password="secret",
        retries=float("inf"),
        key_serializer=lambda key: key.encode(),
        value_serializer=str.encode,
        api_version=(2, 5, 0),
    )
    KafkaProducer({"linger.ms": 5, "bootstrap.servers": "localhost:9092"}, acks=1)
    future = producer.send("topic", b"value", key=b"key", headers=[("h", b"v")])
    reveal_type(future)  # reveal: FutureRecordMetadata
    metadata = future.get(timeout=10)
    reveal_type(metadata)  # reveal: RecordMetadata
    reveal_type(metadata.offset)  # reveal: int
    batch = producer.send_many("topic", [b"a", b"b"], partition=0)
    reveal_type(batch)  # reveal: BatchFuture
    reveal_type(batch.get(10))  # reveal: BatchResult
    reveal_type(producer.flush(5))  # reveal: None
    reveal_type(producer.partitions_for("topic"))  # reveal: set[int]
    reveal_type(producer.init_transactions())  # reveal: None
    reveal_type(producer.close(0))  # reveal: None


async def use_aio() -> None:
    producer = AIOKafkaProducer(bootstrap_servers="localhost:9092")
    await producer.start()
    future = await producer.send("topic", b"value")
    reveal_type(future)  # reveal: Future[RecordMetadata]
    reveal_type(await future)  # reveal: RecordMetadata
    reveal_type(await producer.send_and_wait("topic", b"value"))  # reveal: RecordMetadata
    await producer.stop()
    _ = asyncio


def use_confluent() -> None:
    producer = Producer({"bootstrap.servers": "localhost:9092"})
    reveal_type(producer.produce("topic", b"value", key="k"))  # reveal: None
    reveal_type(producer.poll(0))  # reveal: int
    reveal_type(producer.flush(10))  # reveal: int
