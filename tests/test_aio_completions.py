"""cproducer.aio's record deliveries completed by the engine's batches: in C (the function their
type registered) or called as ``fn(metadata, exception)``, the future gets the same
RecordMetadata or error."""

from __future__ import annotations

import asyncio
from typing import Any, List, Tuple

from cproducer import errors
from cproducer.aio import errors as aio_errors
from cproducer.aio.completions import LoopCompletions
from cproducer.aio.structs import RecordMetadata
from cproducer.cluster import TopicPartition
from cproducer.producer.internals.producer_batch import ProducerBatch
from cproducer.record.record_batch_builder import RecordBatchBuilder

TP = TopicPartition("topic", 3)


def _batch() -> ProducerBatch:
    return ProducerBatch(TP, RecordBatchBuilder(bytearray(4096), 0, 4096), 100)


def _deliveries(n: int, outcome: Any) -> List[Any]:
    """n records' futures, appended to one batch with their deliveries as callbacks, then
    ``outcome(batch)`` completes the batch; the futures once the loop drained them."""

    async def main() -> List[Any]:
        completions = LoopCompletions(asyncio.get_running_loop(), -1)
        batch = _batch()
        futures = []
        for i in range(n):
            future, delivery = completions.new_record_delivery()
            # completed in C: the delivery is the record's handle, no engine future is made
            assert batch.try_append(1000 + i, None, b"v%d" % i, None, delivery, 200) is delivery
            futures.append(future)
        outcome(batch)
        await asyncio.sleep(0)  # the drain the completion scheduled
        return list(await asyncio.gather(*futures, return_exceptions=True))

    return asyncio.run(main())


def test_a_batch_completes_its_deliveries_with_aiokafkas_record_metadata() -> None:
    got = _deliveries(3, lambda b: b.complete(500, -1))
    assert got == [RecordMetadata("topic", 3, TP, 500 + i, 1000 + i, 0, None) for i in range(3)]
    assert all(type(md) is RecordMetadata for md in got)
    # a log-append time from the broker is every record's timestamp
    assert {md.timestamp for md in _deliveries(2, lambda b: b.complete(7, 42))} == {42}


def test_a_failed_batch_fails_every_delivery_with_the_records_error() -> None:
    def fail(batch: ProducerBatch) -> None:
        batch.complete_exceptionally(
            errors.KafkaError("batch failed"),
            lambda i: errors.InvalidRecordError(f"record {i}") if i == 1 else None,
        )

    got = _deliveries(3, fail)
    # aiokafka's classes, the engine's error as the cause
    assert [e.__cause__.args[0] for e in got] == ["batch failed", "record 1", "batch failed"]
    assert type(got[1].__cause__) is errors.InvalidRecordError
    assert all(isinstance(e, aio_errors.KafkaError) for e in got)


def test_a_delivery_called_as_a_callback_gives_the_same_results() -> None:
    async def main() -> Tuple[Any, Any]:
        completions = LoopCompletions(asyncio.get_running_loop(), -1)
        ok, ok_cb = completions.new_record_delivery()
        failed, failed_cb = completions.new_record_delivery()
        engine_md = (TP.topic, TP.partition, TP, 17, 1234, None, 1, 1, -1)
        ok_cb(engine_md, None)
        failed_cb(None, errors.KafkaTimeoutError("expired"))
        return await ok, (await asyncio.gather(failed, return_exceptions=True))[0]

    md, exc = asyncio.run(main())
    assert md == RecordMetadata("topic", 3, TP, 17, 1234, 0, None)
    assert type(exc).__name__ == "KafkaTimeoutError"
