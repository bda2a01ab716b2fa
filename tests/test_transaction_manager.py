"""TransactionManager (idempotent part): sequences, in-flight order, resets, retry decisions."""

from __future__ import annotations

from typing import Any

from cproducer import errors
from cproducer.cluster import TopicPartition
from cproducer.producer.internals.transaction_manager import TransactionManager

TP = TopicPartition("t", 0)


class FakeBatch:
    def __init__(self, tp: TopicPartition, count: int) -> None:
        self.topic_partition = tp
        self.record_count = count
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1

    def has_sequence(self) -> bool:
        return self.base_sequence != -1

    def set_producer_state(self, pid: int, epoch: int, seq: int, txn: bool) -> None:
        self.producer_id, self.producer_epoch, self.base_sequence = pid, epoch, seq


def drain(tm: TransactionManager, batch: Any) -> Any:
    """What the accumulator's drain does for a batch without a sequence."""
    assert not tm.should_stop_drain(batch.topic_partition, batch.base_sequence)
    tm.sequence_batch(batch)
    return batch


def with_state(tm: TransactionManager, tp: TopicPartition = TP) -> None:
    """The partition's first batch under the id (one record, sequence 0) drained and
    acknowledged: the broker holds state for the id there, and batches pipeline."""
    batch = FakeBatch(tp, 1)
    tm.sequence_batch(batch)  # the drain's step (a transaction's partition added or not)
    tm.handle_completed_batch(batch, base_offset=0)


def test_needs_id_until_set_and_sequences_advance() -> None:
    tm = TransactionManager()
    assert tm.needs_producer_id() and not tm.is_send_to_partition_allowed(TP)
    tm.set_producer_id_and_epoch(1000, 0)
    assert not tm.needs_producer_id() and tm.is_send_to_partition_allowed(TP)
    b1 = drain(tm, FakeBatch(TP, 3))
    tm.handle_completed_batch(b1, base_offset=10)
    b2, b3 = drain(tm, FakeBatch(TP, 5)), drain(tm, FakeBatch(TP, 1))
    assert (b1.base_sequence, b2.base_sequence, b3.base_sequence) == (0, 3, 8)
    assert tm.sequence_number(TP) == 9
    assert tm.next_batch_by_sequence(TP) is b2
    tm.handle_completed_batch(b2, base_offset=13)
    assert tm.next_batch_by_sequence(TP) is b3
    tm.handle_completed_batch(b3, base_offset=18)
    assert not tm.has_in_flight_batches(TP)


def test_a_partitions_first_batch_under_an_id_goes_alone() -> None:
    """A partition with no state for the producer id writes whatever sequence comes first: a
    second batch waits until the first is acknowledged, so a leader that refuses the first
    and would write the second cannot put the second ahead. Other partitions go meanwhile;
    once acknowledged, the partition pipelines; under a new id it starts alone again."""
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    other = TopicPartition("t", 1)
    b1 = drain(tm, FakeBatch(TP, 2))
    assert tm.should_stop_drain(TP, -1)
    drain(tm, FakeBatch(other, 1))  # another partition's first batch is not held by it
    assert tm.can_retry(errors.NotLeaderForPartitionError(), b1, -1)
    assert tm.should_stop_drain(TP, -1)  # refused: it goes again, still alone
    assert not tm.should_stop_drain(TP, b1.base_sequence)
    tm.handle_completed_batch(b1, base_offset=0)
    b2, b3 = drain(tm, FakeBatch(TP, 2)), drain(tm, FakeBatch(TP, 2))  # pipelined
    assert (b2.base_sequence, b3.base_sequence) == (2, 4)
    tm.handle_completed_batches([b2, b3], [2, 4])
    tm.set_producer_id_and_epoch(7, 1)
    assert drain(tm, FakeBatch(TP, 1)).base_sequence == 0
    assert tm.should_stop_drain(TP, -1)


def test_a_retried_batch_is_drained_only_as_the_first_in_flight() -> None:
    tm = TransactionManager()
    assert tm.should_stop_drain(TP, -1)  # no producer id yet
    tm.set_producer_id_and_epoch(7, 0)
    with_state(tm)
    b1, b2, b3 = (drain(tm, FakeBatch(TP, 2)) for _ in range(3))
    assert [b.base_sequence for b in (b1, b2, b3)] == [1, 3, 5]
    # b2 and b3 come back for a retry while b1 is still in flight: they wait for it
    assert tm.should_stop_drain(TP, b2.base_sequence)
    assert tm.should_stop_drain(TP, b3.base_sequence)
    assert tm.should_stop_drain(TP, b1.base_sequence) is False
    assert tm.should_stop_drain(TP, -1) is False  # a new batch is not held back
    tm.handle_completed_batch(b1, base_offset=0)
    assert tm.should_stop_drain(TP, b2.base_sequence) is False
    tm.request_producer_id_reset("test")
    assert tm.should_stop_drain(TP, b2.base_sequence) and tm.should_stop_drain(TP, -1)


def test_in_flight_batches_stay_in_sequence_order_when_one_is_added_back() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    with_state(tm)
    b1, b2, b3 = (drain(tm, FakeBatch(TP, 1)) for _ in range(3))
    tm.handle_failed_batch(b1, errors.NotLeaderForPartitionError(), adjust_sequences=False)
    tm.handle_completed_batch(b2, base_offset=5)
    tm.add_in_flight_batch(b1)  # a batch put back (a split's part, say) goes first again
    assert tm.next_batch_by_sequence(TP) is b1
    tm.handle_completed_batch(b1, base_offset=4)
    assert tm.next_batch_by_sequence(TP) is b3
    b4 = drain(tm, FakeBatch(TP, 1))
    assert b4.base_sequence == 4 and tm.sequence_number(TP) == 5


def test_out_of_order_for_a_later_batch_is_retried_without_reset() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    with_state(tm)
    b1, b2 = drain(tm, FakeBatch(TP, 2)), drain(tm, FakeBatch(TP, 2))
    # b2 arrived before b1 landed: not the next expected batch -> retry, no reset
    assert tm.can_retry(errors.OutOfOrderSequenceNumberError(), b2, -1)
    assert not tm.reset_requested()
    # b1 itself is the next one: a real gap -> the producer id is reset
    assert tm.can_retry(errors.OutOfOrderSequenceNumberError(), b1, -1)
    assert tm.reset_requested() and tm.needs_producer_id()
    assert not tm.is_send_to_partition_allowed(TP)


def _passed_by_a_later_batch(tm: TransactionManager, first_unanswered: bool = False) -> Any:
    """b1 answered NOT_LEADER_OR_FOLLOWER (or, ``first_unanswered``, its request timed out),
    then b2 written: a broker that lost the id's state takes any sequence (a partition's first
    batch under an id goes alone, so not a new topic's). b1's retry is then answered
    OUT_OF_ORDER_SEQUENCE_NUMBER."""
    tm.set_producer_id_and_epoch(7, 0)
    with_state(tm)
    b1, b2 = FakeBatch(TP, 2), FakeBatch(TP, 3)
    tm.sequence_batch(b1)  # the drain's step (a transaction's partition added or not)
    tm.sequence_batch(b2)
    first = (
        errors.RequestTimedOutError() if first_unanswered else errors.NotLeaderForPartitionError()
    )
    assert tm.can_retry(first, b1, -1)
    tm.handle_completed_batch(b2, base_offset=3)
    return b1


def test_a_batch_passed_by_a_later_one_fails_at_once_and_the_id_goes_on() -> None:
    """Written now, b1 would land after b2, sent after it; retried under its id it would be
    refused until delivery.timeout.ms (Java's stall). It fails at once, saying why; the
    sequences after it are in the log in order, so the id and the next sequence stay."""
    tm = TransactionManager()
    b1 = _passed_by_a_later_batch(tm)
    broker_said = errors.OutOfOrderSequenceNumberError("Out of order sequence number")
    assert not tm.can_retry(broker_said, b1, -1)
    exc = tm.failure_for(b1, broker_said)
    assert isinstance(exc, errors.OutOfOrderSequenceNumberError) and exc.__cause__ is broker_said
    assert "out of send order" in str(exc) and "they were not written" in str(exc)
    assert "t-0" in str(exc) or "TopicPartition" in str(exc)
    tm.handle_failed_batch(b1, exc, adjust_sequences=True)
    assert not tm.reset_requested() and tm.producer_id_and_epoch == (7, 0)
    assert drain(tm, FakeBatch(TP, 1)).base_sequence == 6
    # another error, or a batch not passed, keeps its own error
    other = errors.NotEnoughReplicasError()
    assert tm.failure_for(b1, other) is other


def test_a_batch_passed_by_a_later_one_may_be_in_the_log_fails_saying_so() -> None:
    """b1's request timed out: the broker may have written it (out of the window of five it
    answers DUPLICATE_SEQUENCE_NUMBER for). Not sent again under a new id (twice) nor retried
    until delivery.timeout.ms: it fails at once, saying it may be in the topic."""
    tm = TransactionManager()
    b1 = _passed_by_a_later_batch(tm, first_unanswered=True)
    broker_said = errors.OutOfOrderSequenceNumberError()
    assert not tm.can_retry(broker_said, b1, -1)
    assert "may be in the topic" in str(tm.failure_for(b1, broker_said))
    assert not tm.reset_requested()


def _expired_after_a_retry(tm: TransactionManager) -> Any:
    """b1, b2, b3 sent; b1 retried (NOT_ENOUGH_REPLICAS) and then expired at its
    delivery.timeout.ms, as the Sender fails it and marks it (Java's inRetry())."""
    tm.set_producer_id_and_epoch(7, 0)
    with_state(tm)
    b1, b2, b3 = (drain(tm, FakeBatch(TP, 2)) for _ in range(3))
    assert tm.can_retry(errors.NotEnoughReplicasError(), b1, -1)
    tm.handle_failed_batch(b1, errors.KafkaTimeoutError("Expiring 2 record(s)"), False)
    tm.mark_sequence_unresolved(b1)
    return b1, b2, b3


def test_an_expired_retry_holds_new_batches_until_the_partition_resolves() -> None:
    """Java's unresolved sequences (KIP-360): whether b1 is in the log is unknown. New
    batches wait; the ones in flight go on; once none is left and the sequences have a gap
    (b2 and b3 expired too) the producer takes a new id, under which the new batches start at
    sequence 0. (Before, new batches took the sequences after the gap and were answered
    OUT_OF_ORDER_SEQUENCE_NUMBER until they expired as well: a partition's records failed for
    tens of seconds after its brokers were back.)"""
    tm = TransactionManager()
    _, b2, b3 = _expired_after_a_retry(tm)
    assert tm.has_unresolved_sequences()
    assert tm.should_stop_drain(TP, -1)  # a new batch waits
    assert not tm.should_stop_drain(TP, b2.base_sequence)  # a sequenced one goes on
    tm.maybe_resolve_sequences()
    assert not tm.reset_requested()  # b2 and b3 are still in flight
    for b in (b2, b3):
        tm.handle_failed_batch(b, errors.KafkaTimeoutError("Expiring 2 record(s)"), False)
    tm.maybe_resolve_sequences()
    assert tm.reset_requested() and not tm.has_unresolved_sequences()
    tm.set_producer_id_and_epoch(7, 1)
    assert drain(tm, FakeBatch(TP, 1)).base_sequence == 0


def test_an_expired_retry_is_resolved_by_the_later_batches_written() -> None:
    """b2 and b3 written after b1 expired: the broker took the sequences after b1, so b1 is
    in the log too; nothing to reset, new batches go on from the next sequence."""
    tm = TransactionManager()
    _, b2, b3 = _expired_after_a_retry(tm)
    tm.handle_completed_batches([b2, b3], [3, 5])
    tm.maybe_resolve_sequences()
    assert not tm.reset_requested() and not tm.has_unresolved_sequences()
    assert drain(tm, FakeBatch(TP, 1)).base_sequence == 7


def test_out_of_order_right_after_an_expired_retry_resets_at_once() -> None:
    """b2 (the sequence right after b1) refused OUT_OF_ORDER_SEQUENCE_NUMBER: b1 is not in the
    log; a new id at once (Java's isNextSequenceForUnresolvedPartition), b2 retried under it.
    b3's refusal alone proves nothing: retried, no reset."""
    tm = TransactionManager()
    _, b2, b3 = _expired_after_a_retry(tm)
    assert tm.can_retry(errors.OutOfOrderSequenceNumberError(), b3, -1)
    assert not tm.reset_requested()
    assert tm.can_retry(errors.OutOfOrderSequenceNumberError(), b2, -1)
    assert tm.reset_requested()


def test_a_transaction_marks_no_sequence_unresolved() -> None:
    tm = TransactionManager(transactional_id="t")
    tm.set_producer_id_and_epoch(7, 0)
    b1 = FakeBatch(TP, 2)
    tm.sequence_batch(b1)
    tm.mark_sequence_unresolved(b1)
    assert not tm.has_unresolved_sequences()


def test_a_transactional_batch_passed_by_a_later_one_fails() -> None:
    tm = TransactionManager(transactional_id="t")
    b1 = _passed_by_a_later_batch(tm)
    assert not tm.can_retry(errors.OutOfOrderSequenceNumberError(), b1, -1)


def test_reset_renumbers_waiting_batches_from_zero_in_order() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    b1 = drain(tm, FakeBatch(TP, 2))
    tm.handle_completed_batch(b1, base_offset=0)
    b2, b3 = (drain(tm, FakeBatch(TP, n)) for n in (3, 4))
    assert tm.can_retry(errors.UnknownProducerIdError(), b2, 0)
    tm.set_producer_id_and_epoch(8, 0)
    assert tm.resets == 1
    assert (b2.producer_id, b2.base_sequence) == (8, 0)
    assert (b3.producer_id, b3.base_sequence) == (8, 3)
    assert tm.sequence_number(TP) == 7
    # under the new id the partition holds no state until b2, its first batch, is written
    assert tm.should_stop_drain(TP, -1)
    tm.handle_completed_batch(b2, base_offset=2)
    b4 = drain(tm, FakeBatch(TP, 1))
    assert b4.base_sequence == 7


def test_failed_batch_closes_the_sequence_gap() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    with_state(tm)
    b1, b2 = drain(tm, FakeBatch(TP, 2)), drain(tm, FakeBatch(TP, 3))
    tm.handle_failed_batch(b1, errors.InvalidRecordError("bad"), adjust_sequences=True)
    assert b2.base_sequence == 1
    assert tm.sequence_number(TP) == 4


def test_fenced_is_fatal() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    b1 = drain(tm, FakeBatch(TP, 1))
    tm.handle_failed_batch(b1, errors.ProducerFencedError(), adjust_sequences=False)
    assert isinstance(tm.fatal_error, errors.ProducerFencedError)
    assert not tm.is_send_to_partition_allowed(TP)
    assert not tm.needs_producer_id()


def test_plain_retriable_errors_follow_the_error_class() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    b = drain(tm, FakeBatch(TP, 1))
    assert tm.can_retry(errors.NotLeaderForPartitionError(), b, -1)
    assert not tm.can_retry(errors.InvalidRecordError(), b, -1)


def test_one_answer_acknowledges_its_batches_in_any_order() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    other = TopicPartition("t", 1)
    with_state(tm)
    a1, a2, b1 = (
        drain(tm, FakeBatch(TP, 2)),
        drain(tm, FakeBatch(TP, 3)),
        drain(tm, FakeBatch(other, 1)),
    )
    # a2 is answered before a1 (it is not the first in flight): it still leaves, a1 stays first
    tm.handle_completed_batches([a2, b1], [12, 0])
    assert tm.next_batch_by_sequence(TP) is a1 and not tm.has_in_flight_batches(other)
    assert tm._partitions[TP].last_acked_sequence == 5
    assert tm._partitions[TP].last_acked_offset == 14
    tm.handle_completed_batches([a1], [-1])  # no offset known: the acked offset stays
    assert not tm.has_in_flight_batches()
    assert (tm._partitions[TP].last_acked_sequence, tm._partitions[TP].last_acked_offset) == (5, 14)
    # a batch of an older producer id leaves the in-flight list without moving the acked state
    tm.set_producer_id_and_epoch(8, 0)
    stale = FakeBatch(TP, 1)
    stale.producer_id, stale.base_sequence = 7, 5
    tm._partitions[TP].in_flight.append(stale)
    tm.handle_completed_batches([stale], [20])
    assert not tm.has_in_flight_batches(TP) and tm._partitions[TP].last_acked_offset == 14
