"""Sender: in-flight batches past delivery.timeout.ms (Java's getExpiredInflightBatches)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, List

from cproducer import errors
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


def sender(
    accumulator: Any, ordered: bool, client: Any = None, metadata: Any = None, **kw: Any
) -> Sender:
    return Sender(
        client,
        metadata,
        accumulator,
        guarantee_message_order=ordered,
        max_request_size=1 << 20,
        acks=-1,
        retries=3,
        request_timeout_ms=100,
        delivery_timeout_ms=1000,
        clock=ManualClock(),
        **kw,
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


class DrainingAccumulator(FakeAccumulator):
    """ready() names node 1; drain() hands out the given batches; deallocate() gives a batch's
    memory back as the real one does (its buffer() raises from then on)."""

    def __init__(self, drained: List[Any]) -> None:
        super().__init__()
        self.drained = drained
        self.deallocated: List[Any] = []

    def ready(self, cluster: Any, now: int) -> Any:
        return SimpleNamespace(
            ready_nodes=[1], unknown_leader_topics=[], next_ready_check_delay_ms=100
        )

    def update_node_latency_stats(self, node_id: int, now: int, ready: bool) -> None:
        pass

    def drain(self, cluster: Any, nodes: Any, max_size: int, now: int) -> Any:
        drained, self.drained = self.drained, []
        return {1: drained}

    def expired_batches(self, now: int) -> List[Any]:
        return []

    def deallocate(self, batch: Any) -> None:
        self.deallocated.append(batch)
        batch.builder.release_memory()


class OneNodeClient:
    def __init__(self) -> None:
        self.sent: List[Any] = []

    def wakeup(self) -> None:
        pass

    def ready(self, node: Any, now: int) -> bool:
        return True

    def api_version_for(self, node_id: int, request_class: Any) -> int:
        return 9

    def send(self, request: Any, now: int) -> None:
        self.sent.append(request)


def test_a_drained_retry_past_the_delivery_timeout_fails_and_is_not_sent() -> None:
    """A batch sent again (a retriable answer) can be drained after its delivery.timeout.ms: it
    fails with a timeout in the same pass, as in Java, and gives its memory back, so the request
    leaves it out and takes the other batches (its buffer is gone: the I/O thread stopped on it)."""
    retried, fresh = batch(A, 0), batch(B, 1400)
    for b in (retried, fresh):
        b.close()
    acc, client = DrainingAccumulator([retried, fresh]), OneNodeClient()
    cluster = SimpleNamespace(node_by_id=lambda node_id: SimpleNamespace(id=node_id))
    s = sender(
        acc, False, client, SimpleNamespace(fetch=lambda: cluster), batch_time_ms=lambda: 1500
    )
    s.send_producer_data(0)
    assert isinstance(retried.result.error_for(0), errors.KafkaTimeoutError)
    assert acc.deallocated == [retried]
    [request] = client.sent
    assert request.request.topic_data == {"t": [(1, fresh.buffer())]}
    assert s.in_flight_batches == {B: [fresh]}
