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


def test_needs_id_until_set_and_sequences_advance() -> None:
    tm = TransactionManager()
    assert tm.needs_producer_id() and not tm.is_send_to_partition_allowed(TP)
    tm.set_producer_id_and_epoch(1000, 0)
    assert not tm.needs_producer_id() and tm.is_send_to_partition_allowed(TP)
    b1, b2 = drain(tm, FakeBatch(TP, 3)), drain(tm, FakeBatch(TP, 5))
    assert (b1.base_sequence, b2.base_sequence) == (0, 3)
    assert tm.sequence_number(TP) == 8
    assert tm.next_batch_by_sequence(TP) is b1
    tm.handle_completed_batch(b1, base_offset=10)
    assert tm.next_batch_by_sequence(TP) is b2
    tm.handle_completed_batch(b2, base_offset=13)
    assert not tm.has_in_flight_batches(TP)


def test_a_retried_batch_is_drained_only_as_the_first_in_flight() -> None:
    tm = TransactionManager()
    assert tm.should_stop_drain(TP, -1)  # no producer id yet
    tm.set_producer_id_and_epoch(7, 0)
    b1, b2, b3 = (drain(tm, FakeBatch(TP, 2)) for _ in range(3))
    assert [b.base_sequence for b in (b1, b2, b3)] == [0, 2, 4]
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
    b1, b2, b3 = (drain(tm, FakeBatch(TP, 1)) for _ in range(3))
    tm.handle_failed_batch(b1, errors.NotLeaderForPartitionError(), adjust_sequences=False)
    tm.handle_completed_batch(b2, base_offset=5)
    tm.add_in_flight_batch(b1)  # a batch put back (a split's part, say) goes first again
    assert tm.next_batch_by_sequence(TP) is b1
    tm.handle_completed_batch(b1, base_offset=4)
    assert tm.next_batch_by_sequence(TP) is b3
    b4 = drain(tm, FakeBatch(TP, 1))
    assert b4.base_sequence == 3 and tm.sequence_number(TP) == 4


def test_out_of_order_for_a_later_batch_is_retried_without_reset() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    b1, b2 = drain(tm, FakeBatch(TP, 2)), drain(tm, FakeBatch(TP, 2))
    # b2 arrived before b1 landed: not the next expected batch -> retry, no reset
    assert tm.can_retry(errors.OutOfOrderSequenceNumberError(), b2, -1)
    assert not tm.reset_requested()
    # b1 itself is the next one: a real gap -> the producer id is reset
    assert tm.can_retry(errors.OutOfOrderSequenceNumberError(), b1, -1)
    assert tm.reset_requested() and tm.needs_producer_id()
    assert not tm.is_send_to_partition_allowed(TP)


def _passed_by_a_later_batch(tm: TransactionManager) -> Any:
    """b1 answered NOT_LEADER_OR_FOLLOWER, then b2 written (a new leader with no state for the
    id takes any first sequence), then b1's retry answered OUT_OF_ORDER_SEQUENCE_NUMBER."""
    tm.set_producer_id_and_epoch(7, 0)
    b1, b2 = FakeBatch(TP, 2), FakeBatch(TP, 3)
    tm.sequence_batch(b1)  # the drain's step (a transaction's partition added or not)
    tm.sequence_batch(b2)
    assert tm.can_retry(errors.NotLeaderForPartitionError(), b1, -1)
    tm.handle_completed_batch(b2, base_offset=0)
    return b1


def test_a_batch_passed_by_a_later_one_goes_again_under_a_new_id() -> None:
    tm = TransactionManager()
    b1 = _passed_by_a_later_batch(tm)
    # waiting cannot close the gap (sequences 2-4 are written): a new id, b1 from sequence 0
    assert tm.can_retry(errors.OutOfOrderSequenceNumberError(), b1, -1)
    assert tm.reset_requested()
    tm.set_producer_id_and_epoch(8, 0)
    assert (b1.producer_id, b1.base_sequence) == (8, 0)


def test_a_batch_passed_by_a_later_one_fails_when_it_may_be_in_the_log() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    b1, b2 = drain(tm, FakeBatch(TP, 2)), drain(tm, FakeBatch(TP, 3))
    # b1's request timed out: the broker may have written it; sending it under a new id could
    # write it twice, so it is not retried
    assert tm.can_retry(errors.RequestTimedOutError(), b1, -1)
    tm.handle_completed_batch(b2, base_offset=2)
    assert not tm.can_retry(errors.OutOfOrderSequenceNumberError(), b1, -1)
    assert not tm.reset_requested()


def test_a_transactional_batch_passed_by_a_later_one_fails() -> None:
    tm = TransactionManager(transactional_id="t")
    b1 = _passed_by_a_later_batch(tm)
    assert not tm.can_retry(errors.OutOfOrderSequenceNumberError(), b1, -1)


def test_reset_renumbers_waiting_batches_from_zero_in_order() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    b1, b2, b3 = (drain(tm, FakeBatch(TP, n)) for n in (2, 3, 4))
    tm.handle_completed_batch(b1, base_offset=0)
    assert tm.can_retry(errors.UnknownProducerIdError(), b2, 0)
    tm.set_producer_id_and_epoch(8, 0)
    assert tm.resets == 1
    assert (b2.producer_id, b2.base_sequence) == (8, 0)
    assert (b3.producer_id, b3.base_sequence) == (8, 3)
    assert tm.sequence_number(TP) == 7
    b4 = drain(tm, FakeBatch(TP, 1))
    assert b4.base_sequence == 7


def test_failed_batch_closes_the_sequence_gap() -> None:
    tm = TransactionManager()
    tm.set_producer_id_and_epoch(7, 0)
    b1, b2 = drain(tm, FakeBatch(TP, 2)), drain(tm, FakeBatch(TP, 3))
    tm.handle_failed_batch(b1, errors.InvalidRecordError("bad"), adjust_sequences=True)
    assert b2.base_sequence == 0
    assert tm.sequence_number(TP) == 3


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
    a1, a2, b1 = (
        drain(tm, FakeBatch(TP, 2)),
        drain(tm, FakeBatch(TP, 3)),
        drain(tm, FakeBatch(other, 1)),
    )
    # a2 is answered before a1 (it is not the first in flight): it still leaves, a1 stays first
    tm.handle_completed_batches([a2, b1], [12, 0])
    assert tm.next_batch_by_sequence(TP) is a1 and not tm.has_in_flight_batches(other)
    assert tm._partitions[TP].last_acked_sequence == 4
    assert tm._partitions[TP].last_acked_offset == 14
    tm.handle_completed_batches([a1], [-1])  # no offset known: the acked offset stays
    assert not tm.has_in_flight_batches()
    assert (tm._partitions[TP].last_acked_sequence, tm._partitions[TP].last_acked_offset) == (4, 14)
    # a batch of an older producer id leaves the in-flight list without moving the acked state
    tm.set_producer_id_and_epoch(8, 0)
    stale = FakeBatch(TP, 1)
    stale.producer_id, stale.base_sequence = 7, 5
    tm._partitions[TP].in_flight.append(stale)
    tm.handle_completed_batches([stale], [20])
    assert not tm.has_in_flight_batches(TP) and tm._partitions[TP].last_acked_offset == 14
