"""Sender: a Produce answer completes the batches the broker wrote and retries the others."""

from __future__ import annotations

from typing import Any, List, Tuple

import pytest

from cproducer import errors
from cproducer.cluster import TopicPartition
from cproducer.network.network_client import ClientResponse
from cproducer.producer.internals.producer_batch import ProducerBatch
from cproducer.producer.internals.sender import Sender, record_exceptions_for
from cproducer.producer.internals.transaction_manager import TransactionManager
from cproducer.protocol.produce import PartitionProduceResponse, ProduceResponse
from cproducer.record.record_batch_builder import RecordBatchBuilder
from cproducer.utils.time import ManualClock

A, B, C = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


class FakeAccumulator:
    def __init__(self) -> None:
        self.deallocated: List[Any] = []
        self.reenqueued: List[Any] = []

    def deallocate(self, batch: Any) -> None:
        self.deallocated.append(batch)

    def reenqueue(self, batch: Any, now: int) -> None:
        self.reenqueued.append(batch)

    def unmute_partition(self, tp: Any) -> None:
        pass


class FakeMetadata:
    def __init__(self) -> None:
        self.update_requests = 0

    def request_update(self) -> None:
        self.update_requests += 1


NOW = ManualClock().milliseconds()


def sent_batch(tp: TopicPartition, tm: TransactionManager, records: int) -> Any:
    b = ProducerBatch(tp, RecordBatchBuilder(bytearray(1024), 0, 1024), NOW)
    futures = [b.try_append(NOW, None, b"v%d" % i, None, None, NOW) for i in range(records)]
    assert None not in futures
    tm.sequence_batch(b)
    b.close()
    return b, futures


def answer(parts: dict) -> ClientResponse:
    return ClientResponse(None, 1, 0, ProduceResponse(parts))  # type: ignore[arg-type]


def sender() -> Tuple[FakeAccumulator, FakeMetadata, TransactionManager, Sender]:
    """A Sender over fakes, with an idempotent producer's transaction manager (id 7)."""
    acc, md = FakeAccumulator(), FakeMetadata()
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    s = Sender(
        None,  # type: ignore[arg-type]
        md,  # type: ignore[arg-type]
        acc,  # type: ignore[arg-type]
        guarantee_message_order=False,
        max_request_size=1 << 20,
        acks=-1,
        retries=3,
        request_timeout_ms=100,
        delivery_timeout_ms=100_000,
        transaction_manager=tm,
        clock=ManualClock(),
    )
    return acc, md, tm, s


def test_one_answer_completes_the_written_batches_and_retries_the_refused_one() -> None:
    acc, md, tm, s = sender()
    (a, fa), (b, _), (c, fc) = sent_batch(A, tm, 2), sent_batch(B, tm, 1), sent_batch(C, tm, 3)
    s.in_flight_batches = {A: [a], B: [b], C: [c]}
    not_leader = errors.NotLeaderOrFollowerError.errno
    s._handle_produce_response(
        answer(
            {
                ("t", 0): PartitionProduceResponse(0, 100, -1),
                ("t", 1): PartitionProduceResponse(not_leader, -1, -1),
                ("t", 2): PartitionProduceResponse(0, 200, 5555),
            }
        ),
        {A: a, B: b, C: c},
        0,
    )
    assert [f.get(0).offset for f in fa] == [100, 101]
    assert [(f.get(0).offset, f.get(0).timestamp) for f in fc] == [
        (200, 5555),
        (201, 5555),
        (202, 5555),
    ]  # the broker's log append time
    assert acc.deallocated == [a, c]  # in the answer's order; b's memory stays with it
    assert acc.reenqueued == [b] and not b.is_done
    assert md.update_requests == 1  # a moved leader: new metadata
    assert s.in_flight_batches == {}  # b leaves too: it goes back to its queue
    # the transaction manager: a and c acknowledged, b still in flight for its retry
    assert not tm.has_in_flight_batches(A) and not tm.has_in_flight_batches(C)
    assert tm.next_batch_by_sequence(B) is b


def test_record_errors_fail_each_record_as_java_does() -> None:
    """KIP-467: a batch refused naming the records at fault. One record at fault gets the
    partition's error with its own message, several each get InvalidRecordError, and the other
    records of the batch a plain KafkaError (Java's Sender.failBatch); the batch's error, with the
    broker's message, is each one's cause. A batch of another partition is written."""
    acc, md, tm, s = sender()
    (a, fa), (b, fb), (c, fc) = sent_batch(A, tm, 3), sent_batch(B, tm, 2), sent_batch(C, tm, 3)
    s.in_flight_batches = {A: [a], B: [b], C: [c]}
    invalid, bad_time = errors.InvalidRecordError.errno, errors.InvalidTimestampError.errno
    s._handle_produce_response(
        answer(
            {
                ("t", 0): PartitionProduceResponse(
                    invalid, -1, record_errors=[(1, "no key")], error_message="1 record error"
                ),
                ("t", 1): PartitionProduceResponse(0, 40, -1),
                ("t", 2): PartitionProduceResponse(
                    bad_time,
                    -1,
                    record_errors=[(0, "too late"), (2, None)],
                    error_message="rejected: invalid timestamp",
                ),
            }
        ),
        {A: a, B: b, C: c},
        0,
    )
    assert [f.get(0).offset for f in fb] == [40, 41]
    got_a = [f.exception for f in fa]
    assert [type(e) for e in got_a] == [
        errors.KafkaError,
        errors.InvalidRecordError,
        errors.KafkaError,
    ]
    assert got_a[1].args == ("no key",)
    assert (
        got_a[0].args
        == got_a[2].args
        == (
            "Failed to append record because it was part of a batch which had one or more invalid "
            "records",
        )
    )
    assert {type(e.__cause__) for e in got_a} == {errors.InvalidRecordError}
    assert {e.__cause__.args for e in got_a} == {("1 record error",)}
    got_c = [f.exception for f in fc]
    # two records at fault: one code cannot say why each failed, so each gets INVALID_RECORD;
    # without a message of its own, a record's error says the partition's
    assert [type(e) for e in got_c] == [
        errors.InvalidRecordError,
        errors.KafkaError,
        errors.InvalidRecordError,
    ]
    assert (got_c[0].args, got_c[2].args) == (("too late",), ("rejected: invalid timestamp",))
    assert {type(e.__cause__) for e in got_c} == {errors.InvalidTimestampError}
    with pytest.raises(errors.InvalidRecordError, match="no key"):
        fa[1].get(0)
    assert acc.deallocated == [a, c, b] and not acc.reenqueued  # not retriable
    assert a.is_done and c.is_done


def test_one_record_at_fault_gets_the_partitions_error_class() -> None:
    part = PartitionProduceResponse(
        errors.InvalidTimestampError.errno, -1, record_errors=[(3, None)]
    )
    batch_error = errors.InvalidTimestampError()
    per_record = record_exceptions_for(batch_error, part)
    assert per_record is not None
    exc = per_record(3)
    assert type(exc) is errors.InvalidTimestampError and exc.__cause__ is batch_error
    # no message from the broker at all: the code's description, as Java's Errors.message()
    assert exc.args == (errors.InvalidTimestampError.description,)
    assert type(per_record(0)) is errors.KafkaError
    assert record_exceptions_for(batch_error, PartitionProduceResponse(32, -1)) is None
