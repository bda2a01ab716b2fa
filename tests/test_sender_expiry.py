"""Sender: in-flight batches past delivery.timeout.ms (Java's getExpiredInflightBatches)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, List

from cproducer import errors
from cproducer.cluster import TopicPartition
from cproducer.network.network_client import ClientResponse
from cproducer.producer.internals.producer_batch import ProducerBatch
from cproducer.producer.internals.sender import Sender
from cproducer.producer.internals.transaction_manager import TransactionManager
from cproducer.protocol.produce import PartitionProduceResponse, ProduceResponse
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


class LateAnswerClient(OneNodeClient):
    """Answers each Produce request NOT_ENOUGH_REPLICAS ``delay_ms`` after it was sent; its
    poll moves the clock up to the poll timeout or the next answer, whichever comes first."""

    def __init__(self, clock: ManualClock, delay_ms: int) -> None:
        super().__init__()
        self.clock, self.delay_ms = clock, delay_ms
        self.due: List[Any] = []  # (when, request)

    def send(self, request: Any, now: int) -> None:
        super().send(request, now)
        self.due.append((now + self.delay_ms, request))

    def poll(self, timeout_ms: int, now: int) -> None:
        until = min([now + timeout_ms, *(when for when, _ in self.due)])
        self.clock.sleep(max(0, until - self.clock.monotonic_ms()))
        for when, request in [d for d in self.due if d[0] <= self.clock.monotonic_ms()]:
            self.due.remove((when, request))
            parts = {
                (tp, p): PartitionProduceResponse(errors.NotEnoughReplicasError.errno, -1, -1)
                for tp, data in request.request.topic_data.items()
                for p, _ in data
            }
            request.callback(
                ClientResponse(request, 1, self.clock.monotonic_ms(), ProduceResponse(parts))
            )

    def take_authentication_failures(self) -> List[Any]:
        return []


class RetryingAccumulator(DrainingAccumulator):
    """Hands out its batches once; afterwards nothing is ready, and ready() asks to look again
    in ``check_ms`` (another partition's retry backoff, a linger)."""

    def __init__(self, drained: List[Any], check_ms: int) -> None:
        super().__init__(drained)
        self.check_ms = check_ms
        self.reenqueued: List[Any] = []

    def ready(self, cluster: Any, now: int) -> Any:
        return SimpleNamespace(
            ready_nodes=[1] if self.drained else [],
            unknown_leader_topics=[],
            next_ready_check_delay_ms=self.check_ms,
        )

    def reenqueue(self, batch: Any, now: int) -> None:
        self.reenqueued.append(batch)


def test_a_batch_in_flight_expires_at_its_delivery_timeout_not_at_its_late_answer() -> None:
    """Java's Sender bounds each poll by the next batch expiry (the accumulator's
    nextExpiryTimeMs, which getExpiredInflightBatches keeps for the batches in flight): a batch
    whose request is still unanswered when delivery.timeout.ms passes fails then, with
    ``Expiring N record(s) ...``. Here the broker answers NOT_ENOUGH_REPLICAS 50 ms after that
    moment; without the bound the poll (waiting 300 ms at a time for other batches) would sleep
    past the deadline, take the late answer first, and fail the record with the broker's
    retriable NotEnoughReplicasError instead of the timeout (or hold it until the answer)."""
    clock = ManualClock()
    outcomes: List[Any] = []

    def record_done(md: Any, exc: Any) -> None:
        outcomes.append((clock.monotonic_ms(), exc))

    b = ProducerBatch(A, RecordBatchBuilder(bytearray(256), 0, 256), 0)
    assert b.try_append(0, None, b"v", None, record_done, 0) is not None
    b.close()
    acc = RetryingAccumulator([b], check_ms=300)
    client = LateAnswerClient(clock, delay_ms=1050)  # delivery.timeout.ms=1000
    cluster = SimpleNamespace(node_by_id=lambda node_id: SimpleNamespace(id=node_id), nodes=[])
    s = Sender(
        client,  # type: ignore[arg-type]
        SimpleNamespace(fetch=lambda: cluster),  # type: ignore[arg-type]
        acc,  # type: ignore[arg-type]
        guarantee_message_order=False,
        max_request_size=1 << 20,
        acks=-1,
        retries=3,
        request_timeout_ms=2000,
        delivery_timeout_ms=1000,
        clock=clock,
        batch_time_ms=clock.monotonic_ms,
    )
    while not outcomes and clock.monotonic_ms() < 5000:
        s.run_once()
    [(at, exc)] = outcomes
    assert isinstance(exc, errors.KafkaTimeoutError), exc
    assert "Expiring 1 record(s)" in str(exc)
    assert at == 1000  # the deadline itself
    assert s.in_flight_batches == {}
    # the late answer then finds the batch done: it is neither retried nor failed again
    while client.due:
        s.run_once()
    assert len(outcomes) == 1 and acc.reenqueued == []


def test_the_poll_timeout_ends_at_the_next_in_flight_expiry() -> None:
    """Nothing ready for 300 ms, a batch in flight since 0 with delivery.timeout.ms=1000: at
    900 the I/O thread sleeps 100 ms, until that batch's deadline."""
    clock = ManualClock()
    in_flight = batch(A, 0)
    acc = RetryingAccumulator([], check_ms=300)
    cluster = SimpleNamespace(node_by_id=lambda node_id: SimpleNamespace(id=node_id), nodes=[])
    s = sender(
        acc,
        False,
        OneNodeClient(),
        SimpleNamespace(fetch=lambda: cluster),
        batch_time_ms=lambda: 900,
    )
    s.in_flight_batches = {A: [in_flight]}
    assert s.send_producer_data(clock.monotonic_ms()) == 100
    assert s.in_flight_batches == {A: [in_flight]}  # not yet expired


class ExpiringAccumulator(RetryingAccumulator):
    """Nothing to drain; ``expired_batches`` hands out the given batches once."""

    def __init__(self, expired: List[Any]) -> None:
        super().__init__([], check_ms=100)
        self.expired = expired

    def expired_batches(self, now: int) -> List[Any]:
        out, self.expired = self.expired, []
        return out


def test_an_expired_retry_leaves_its_partition_unresolved() -> None:
    """Java's Sender marks the sequences of an expired batch that had been sent again
    (inRetry) unresolved: no new batch goes to its partition until the batches sent before are
    done (then a new producer id if they left a gap). A batch that expired unsent leaves its
    partition as it was."""
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    retried, unsent = batch(A, 0), batch(B, 0)
    tm.sequence_batch(retried)
    retried.reenqueued(500)
    cluster = SimpleNamespace(node_by_id=lambda node_id: SimpleNamespace(id=node_id), nodes=[])
    s = sender(
        ExpiringAccumulator([retried, unsent]),
        False,
        OneNodeClient(),
        SimpleNamespace(fetch=lambda: cluster),
        batch_time_ms=lambda: 1500,
        transaction_manager=tm,
    )
    s.send_producer_data(0)
    for b in (retried, unsent):
        assert isinstance(b.result.error_for(0), errors.KafkaTimeoutError)
    assert tm.should_stop_drain(A, -1)
    assert not tm.should_stop_drain(B, -1)
