"""Sender: in-flight batches past delivery.timeout.ms (Java's getExpiredInflightBatches)."""

from __future__ import annotations

from typing import Any, List

from cproducer.cluster import TopicPartition
from cproducer.producer.internals.producer_batch import ProducerBatch
from cproducer.producer.internals.sender import Sender
from cproducer.record.record_batch_builder import RecordBatchBuilder
from cproducer.utils.time import ManualClock

A, B = TopicPartition("t", 0), TopicPartition("t", 1)


class FakeAccumulator:
    def __init__(self) -> None:
        self.unmuted: List[Any] = []

    def unmute_partition(self, tp: Any) -> None:
        self.unmuted.append(tp)


def batch(tp: TopicPartition, created_ms: int) -> ProducerBatch:
    b = ProducerBatch(tp, RecordBatchBuilder(bytearray(256), 0, 256), created_ms)
    assert b.try_append(created_ms, None, b"v", None, None, created_ms) is not None
    return b


def sender(accumulator: Any, ordered: bool) -> Sender:
    return Sender(
        None,
        None,
        accumulator,
        guarantee_message_order=ordered,
        max_request_size=1 << 20,
        acks=-1,
        retries=3,
        request_timeout_ms=100,
        delivery_timeout_ms=1000,
        clock=ManualClock(),
    )


def test_expires_the_oldest_sent_batches_up_to_the_first_within_the_timeout() -> None:
    acc = FakeAccumulator()
    s = sender(acc, ordered=True)
    a_old, a_mid, a_new = batch(A, 0), batch(A, 400), batch(A, 900)
    b_old, b_done = batch(B, 100), batch(B, 200)
    assert b_done.complete(7, -1)  # answered meanwhile: leaves, but is not failed again
    s.in_flight_batches = {A: [a_old, a_mid, a_new], B: [b_old, b_done]}
    expired = s._expired_in_flight_batches(1500)  # cut-off: created at or before 500
    assert expired == [a_old, a_mid, b_old]
    assert s.in_flight_batches == {A: [a_new]}  # B emptied and removed
    assert acc.unmuted == [A, A, B, B]
    assert s._expired_in_flight_batches(1500) == []  # nothing twice


def test_stops_at_the_first_unexpired_batch_of_a_partition() -> None:
    # send order, not creation order, decides (Java's break): a retried older batch sent after a
    # younger one waits behind it
    s = sender(FakeAccumulator(), ordered=False)
    young, retried_old = batch(A, 900), batch(A, 0)
    s.in_flight_batches = {A: [young, retried_old]}
    assert s._expired_in_flight_batches(1500) == []
    assert s._expired_in_flight_batches(1900) == [young, retried_old]
    assert s.in_flight_batches == {}
