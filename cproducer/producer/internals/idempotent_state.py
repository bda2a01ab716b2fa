"""The idempotent producer's half of the TransactionManager (Java's TransactionManager with its
TxnPartitionMap): the producer id and epoch (from InitProducerId) and, per partition, the next
sequence number, the last acknowledged sequence and the batches in flight ordered by base
sequence. The RecordAccumulator asks for sequences while draining; the Sender reports each
batch's outcome.

When the broker loses or rejects our producer state (UNKNOWN_PRODUCER_ID, a real sequence gap), the
producer id is reset: a new InitProducerId is sent once no request is in flight, and the sequences
of the batches still waiting to be retried restart at 0 under the new id (Java's
``resetIdempotentProducerId`` + ``startSequencesAtBeginning``). That keeps the guarantee: no
duplicate and no reordering within a partition under retries.
"""

from __future__ import annotations

import bisect
import logging
import threading
from typing import Any, Dict, List, Optional, Tuple

from cproducer import errors
from cproducer.cluster import TopicPartition
from cproducer.producer.internals.transaction_state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
)

# the TransactionManager's logger: the producer id's changes are logged under it, as before
log = logging.getLogger("cproducer.producer.internals.transaction_manager")


# errors after which a request's outcome is unknown: it may have been written
OUTCOME_UNKNOWN = (
    errors.KafkaConnectionError,
    errors.RequestTimedOutError,
    errors.KafkaTimeoutError,
)


class PartitionEntry:
    __slots__ = (
        "producer_id_and_epoch",
        "next_sequence",
        "last_acked_sequence",
        "in_flight",
        "last_acked_offset",
        "outcome_unknown",
    )

    def __init__(self, producer_id_and_epoch: Tuple[int, int]) -> None:
        self.producer_id_and_epoch = producer_id_and_epoch
        self.next_sequence = 0
        self.last_acked_sequence = -1
        self.in_flight: List[Any] = []  # ProducerBatch, sorted by base_sequence
        self.last_acked_offset = -1
        # a request of this partition under the current id ended without an answer (a dropped
        # connection, a timeout): the broker may hold a batch we never saw acknowledged
        self.outcome_unknown = False


def remove_batch(batches: List[Any], batch: Any) -> None:
    """Take ``batch`` out of a partition's in-flight list, if there. Answers come in send (and
    sequence) order, so it is nearly always the first."""
    if batches and batches[0] is batch:
        del batches[0]
    else:
        try:
            batches.remove(batch)
        except ValueError:
            pass


class IdempotentState:
    """The producer id and the sequences of each partition. Thread-safe: the Sender thread and
    appending threads share it (one re-entrant lock, which the TransactionManager uses too)."""

    def __init__(self, transactional_id: Optional[str]) -> None:
        self.transactional_id = transactional_id
        self._lock = threading.RLock()
        self._pid_epoch: Tuple[int, int] = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        self._partitions: Dict[TopicPartition, PartitionEntry] = {}
        self._reset_requested = False
        self._fatal: Optional[BaseException] = None
        self.resets = 0  # how many times the producer id was reset (observable for tests/metrics)
        # Java's partitionsWithUnresolvedSequences (idempotent producer): partitions where a
        # batch that had been sent again expired, so whether the broker wrote it is unknown, by
        # the sequence after it. No new batch goes to one until its batches in flight are done.
        self._unresolved: Dict[TopicPartition, int] = {}

    # ------------------------------------------------------------------ producer id
    @property
    def producer_id_and_epoch(self) -> Tuple[int, int]:
        return self._pid_epoch

    def has_producer_id(self) -> bool:
        return self._pid_epoch[0] != NO_PRODUCER_ID

    def is_transactional(self) -> bool:
        return self.transactional_id is not None

    def reset_requested(self) -> bool:
        return self._reset_requested

    def set_producer_id_and_epoch(self, producer_id: int, epoch: int) -> None:
        """A new id from InitProducerId: every partition's sequences restart at 0 under it."""
        with self._lock:
            old = self._pid_epoch
            self._pid_epoch = (producer_id, epoch)
            self._reset_requested = False
            if old[0] != NO_PRODUCER_ID and old != self._pid_epoch:
                self.resets += 1
            for tp, entry in self._partitions.items():
                if entry.producer_id_and_epoch != self._pid_epoch:
                    self._start_sequences_at_beginning(tp, entry)
            self._unresolved.clear()  # every partition's sequences start again
            log.info("producer id %d epoch %d", producer_id, epoch)

    def request_producer_id_reset(self, reason: str) -> None:
        with self._lock:
            if not self._reset_requested:
                log.info("resetting the idempotent producer id: %s", reason)
            self._reset_requested = True

    @property
    def fatal_error(self) -> Optional[BaseException]:
        return self._fatal

    # ------------------------------------------------------------------ drain-side (accumulator)
    def _send_allowed(self, tp: TopicPartition) -> bool:
        """May the batches of ``tp`` be drained now (the lock held)? The TransactionManager's
        rule: a usable producer id and, in a transaction, the partition added to it."""
        raise NotImplementedError

    def _entry(self, tp: TopicPartition) -> PartitionEntry:
        entry = self._partitions.get(tp)
        if entry is None:
            entry = PartitionEntry(self._pid_epoch)
            self._partitions[tp] = entry
        return entry

    def sequence_number(self, tp: TopicPartition) -> int:
        with self._lock:
            return self._entry(tp).next_sequence

    def add_in_flight_batch(self, batch: Any) -> None:
        with self._lock:
            self._add_in_flight(self._entry(batch.topic_partition), batch)

    @staticmethod
    def _add_in_flight(entry: PartitionEntry, batch: Any) -> None:
        in_flight = entry.in_flight
        seq = batch.base_sequence
        if not in_flight or in_flight[-1].base_sequence < seq:
            in_flight.append(batch)  # a newly drained batch: the highest sequence so far
        else:  # a retried or split batch goes back among them
            keys = [b.base_sequence for b in in_flight]
            in_flight.insert(bisect.bisect_left(keys, seq), batch)

    # The accumulator's drain makes one call per batch, drain_batch: should_stop_drain and
    # sequence_batch under one lock. At 1,000 partitions a request carries ~1,000 batches of a
    # dozen records, and the Python calls and lock sections per batch cost more than the
    # bookkeeping itself (two calls with a lock each and four helpers before: ~2.5 us a batch).
    def should_stop_drain(self, tp: TopicPartition, base_sequence: int) -> bool:
        """Java's ``shouldStopDrainBatchesForPartition``: True when the first batch queued for
        ``tp`` (``base_sequence`` -1 while it has none) may not be drained now. The partition
        is not (yet) in the transaction, there is no usable producer id, that batch is a
        retried one and an earlier sequence of the partition is still in flight, or it is a
        new batch and the partition's first batch under this producer id is not acknowledged
        yet."""
        with self._lock:
            return self._stop_drain(tp, base_sequence)

    def _stop_drain(self, tp: TopicPartition, base_sequence: int) -> bool:
        # should_stop_drain, the lock held
        if not self._send_allowed(tp):
            return True
        entry = self._partitions.get(tp)
        if base_sequence == NO_SEQUENCE:
            # Java: no new batch while the partition's earlier sequences are unresolved
            if tp in self._unresolved:
                return True
            # Not Java's rule, librdkafka's outcome: a partition that holds no state for
            # this producer id writes whatever sequence comes first. Were a second batch
            # sent while the first one is unanswered, a leader that refuses the first
            # (NOT_LEADER_OR_FOLLOWER, as Apache Kafka answers for a moment after a topic
            # is created) and writes the second would put it ahead: the first could then
            # only land after it. So a partition has one batch in flight until the broker
            # acknowledged one under the current id; from then on the broker checks that
            # each sequence follows the last, and requests pipeline again.
            return entry is not None and entry.last_acked_sequence < 0 and bool(entry.in_flight)
        if entry is None:
            return False
        in_flight = entry.in_flight
        return bool(in_flight) and in_flight[0].base_sequence != base_sequence

    def sequence_batch(self, batch: Any) -> None:
        """Java's drain step for a batch without a sequence: the producer id, epoch and the
        partition's next sequence go into the batch, the sequence moves past its records and
        the batch is in flight, under one lock."""
        with self._lock:
            self._sequence(batch.topic_partition, batch)

    def drain_batch(self, tp: TopicPartition, batch: Any) -> bool:
        """The drain's one call for the first batch queued for ``tp`` (its queue's lock held,
        so no record joins the batch meanwhile): ``should_stop_drain`` and, when it may go and
        has no sequence yet, ``sequence_batch``, under one lock. True: it stays queued, and
        nothing changed."""
        base_sequence = batch.base_sequence
        with self._lock:
            if self._stop_drain(tp, base_sequence):
                return True
            if base_sequence == NO_SEQUENCE:
                self._sequence(tp, batch)
            return False

    def _sequence(self, tp: TopicPartition, batch: Any) -> None:
        # sequence_batch, the lock held. _entry and _add_in_flight's common case (a new batch,
        # the highest sequence) are written out here: this runs once per drained batch
        pid_epoch = self._pid_epoch
        entry = self._partitions.get(tp)
        if entry is None:
            entry = self._partitions[tp] = PartitionEntry(pid_epoch)
        if entry.producer_id_and_epoch != pid_epoch and not entry.in_flight:
            # Java's maybeUpdateProducerIdAndEpoch: nothing in flight under an older id,
            # the partition starts again at sequence 0 under the current one
            entry.producer_id_and_epoch = pid_epoch
            entry.next_sequence = 0
            entry.last_acked_sequence = -1
            entry.outcome_unknown = False
        seq = entry.next_sequence
        batch.set_producer_state(pid_epoch[0], pid_epoch[1], seq, self.transactional_id is not None)
        entry.next_sequence = (seq + batch.record_count) & 0x7FFFFFFF
        in_flight = entry.in_flight
        if not in_flight or in_flight[-1].base_sequence < seq:
            in_flight.append(batch)  # a newly drained batch: the highest sequence so far
        else:
            self._add_in_flight(entry, batch)

    def next_batch_by_sequence(self, tp: TopicPartition) -> Any:
        with self._lock:
            entry = self._partitions.get(tp)
            return entry.in_flight[0] if entry and entry.in_flight else None

    def has_in_flight_batches(self, tp: Optional[TopicPartition] = None) -> bool:
        with self._lock:
            if tp is not None:
                entry = self._partitions.get(tp)
                return bool(entry and entry.in_flight)
            return any(e.in_flight for e in self._partitions.values())

    def _remove_in_flight(self, batch: Any) -> None:
        entry = self._partitions.get(batch.topic_partition)
        if entry is not None:
            remove_batch(entry.in_flight, batch)

    def _start_sequences_at_beginning(self, tp: TopicPartition, entry: PartitionEntry) -> None:
        """Renumber the batches still awaiting an answer/retry from 0 under the current id."""
        pid, epoch = self._pid_epoch
        seq = 0
        for batch in entry.in_flight:
            batch.set_producer_state(pid, epoch, seq, self.is_transactional())
            seq += int(batch.record_count)
        entry.producer_id_and_epoch = self._pid_epoch
        entry.next_sequence = seq
        entry.last_acked_sequence = -1
        entry.outcome_unknown = False

    # ------------------------------------------------------------------ outcomes (Sender)
    def handle_completed_batch(self, batch: Any, base_offset: int) -> None:
        self.handle_completed_batches([batch], [base_offset])

    def handle_completed_batches(self, batches: List[Any], base_offsets: List[int]) -> None:
        """Batches of one answer that the broker wrote, at ``base_offsets`` (-1: not known):
        each partition's last acknowledged sequence and offset move past them, and they are
        no longer in flight. One lock for the whole answer."""
        with self._lock:
            partitions = self._partitions
            for batch, base_offset in zip(batches, base_offsets):
                entry = partitions.get(batch.topic_partition)
                if entry is None:
                    continue
                if batch.producer_id == entry.producer_id_and_epoch[0]:
                    count = batch.record_count
                    last = batch.base_sequence + count - 1
                    if last > entry.last_acked_sequence:
                        entry.last_acked_sequence = last
                    if base_offset >= 0 and base_offset + count - 1 > entry.last_acked_offset:
                        entry.last_acked_offset = base_offset + count - 1
                remove_batch(entry.in_flight, batch)

    def _adjust_sequences_due_to_failed_batch(self, batch: Any) -> None:
        """Java's adjustSequencesDueToFailedBatch: close the gap the failed batch leaves."""
        entry = self._partitions.get(batch.topic_partition)
        if entry is None or batch.producer_id != entry.producer_id_and_epoch[0]:
            return
        count = int(batch.record_count)
        entry.next_sequence = max(0, entry.next_sequence - count)
        pid, epoch = entry.producer_id_and_epoch
        for other in entry.in_flight:
            if other.base_sequence > batch.base_sequence:
                other.set_producer_state(
                    pid, epoch, other.base_sequence - count, self.is_transactional()
                )

    def mark_sequence_unresolved(self, batch: Any) -> None:
        """Java's markSequenceUnresolved: a batch that had been sent again (a retry) expired, so
        whether the broker wrote it is unknown. An idempotent producer's alone (a transaction
        with a failed batch is aborted and bumps its epoch anyway)."""
        with self._lock:
            if self.transactional_id is not None or batch.base_sequence == NO_SEQUENCE:
                return
            entry = self._partitions.get(batch.topic_partition)
            if entry is None or batch.producer_id != entry.producer_id_and_epoch[0]:
                return  # the partition's sequences started again since
            after = (batch.base_sequence + batch.record_count) & 0x7FFFFFFF
            tp = batch.topic_partition
            self._unresolved[tp] = max(self._unresolved.get(tp, 0), after)
            log.debug("%s unresolved: next sequence %d", tp, self._unresolved[tp])

    def has_unresolved_sequences(self) -> bool:
        return bool(self._unresolved)

    def maybe_resolve_sequences(self) -> None:
        """Java's maybeResolveSequences (the Sender asks each loop): an unresolved partition
        with no batch in flight any more is resolved when every sequence it was given was
        acknowledged (later batches were written, so the expired one was too); else its
        sequences have a gap the broker will not pass, and the producer takes a new id (Java
        bumps the epoch) under which they start at 0 again."""
        with self._lock:
            for tp in list(self._unresolved):
                entry = self._partitions.get(tp)
                if entry is not None and entry.in_flight:
                    continue
                del self._unresolved[tp]
                if entry is None or entry.producer_id_and_epoch != self._pid_epoch:
                    continue
                if (entry.last_acked_sequence + 1) & 0x7FFFFFFF != entry.next_sequence:
                    self.request_producer_id_reset(
                        f"batches of {tp} expired after they were sent; the sequences after "
                        "them cannot be written"
                    )

    def can_retry(self, error: BaseException, batch: Any, log_start_offset: int) -> bool:
        """Java's TransactionManager.canRetry for the idempotent producer."""
        with self._lock:
            tp = batch.topic_partition
            entry = self._partitions.get(tp)
            if isinstance(error, errors.UnknownProducerIdError):
                # The broker lost our state (e.g. log head deleted): new id, sequences from 0.
                self.request_producer_id_reset(f"UNKNOWN_PRODUCER_ID for {tp}")
                return True
            if entry is not None and isinstance(error, OUTCOME_UNKNOWN):
                entry.outcome_unknown = True
            if isinstance(error, errors.OutOfOrderSequenceNumberError):
                is_next = entry is not None and batch.base_sequence == entry.last_acked_sequence + 1
                if entry is not None and self._passed_by_later_batch(entry, batch):
                    # The broker wrote later sequences of this id before this batch, so written
                    # now it would land after records sent after it. A partition's first batch
                    # under an id goes alone (should_stop_drain), so this takes a broker that
                    # lost the id's state meanwhile, or an earlier attempt of this batch that
                    # was written unseen and is out of the broker's window of five. Neither a
                    # retry under this id (refused until delivery.timeout.ms, Java's stall)
                    # nor one under a new id (written late) keeps the order: it fails now
                    # (failure_for says why), and the batches after it are already in place.
                    return False
                unresolved = self._unresolved.get(tp)
                if unresolved is not None and self.transactional_id is None:
                    # Java: the batch right after an expired one refused: that one is not in
                    # the log, a gap: a new id now; any other waits for the partition to resolve
                    if batch.base_sequence == unresolved:
                        self.request_producer_id_reset(
                            f"OUT_OF_ORDER_SEQUENCE_NUMBER for {tp} after an expired batch"
                        )
                    return True
                if not is_next:
                    # an earlier batch has not landed yet: retry once it has
                    return True
                self.request_producer_id_reset(f"OUT_OF_ORDER_SEQUENCE_NUMBER for {tp}")
                return True
            return bool(getattr(error, "retriable", False))

    def failure_for(self, batch: Any, error: BaseException) -> BaseException:
        """What a batch that will not be retried fails with: ``error``, or for a batch the
        broker's later sequences passed (see can_retry) an error that says so, the broker's
        answer as its cause."""
        if not isinstance(error, errors.OutOfOrderSequenceNumberError):
            return error
        with self._lock:
            if not self._passed_by_later(batch):
                return error
            written = (
                "an earlier attempt ended without an answer, so they may be in the topic "
                "already (before the later records)"
                if self._partitions[batch.topic_partition].outcome_unknown
                else "they were not written"
            )
        exc = errors.OutOfOrderSequenceNumberError(
            f"{batch.record_count} record(s) for {batch.topic_partition} (sequences from "
            f"{batch.base_sequence}) fail: the broker refused them and then wrote records "
            f"sent after them, so written now they would land out of send order; {written}"
        )
        exc.__cause__ = error
        return exc

    def _passed_by_later(self, batch: Any) -> bool:
        """The broker wrote later sequences of the batch's producer id before it (see
        can_retry); the lock held."""
        entry = self._partitions.get(batch.topic_partition)
        return entry is not None and self._passed_by_later_batch(entry, batch)

    @staticmethod
    def _passed_by_later_batch(entry: PartitionEntry, batch: Any) -> bool:
        return (
            batch.producer_id == entry.producer_id_and_epoch[0]
            and batch.producer_epoch == entry.producer_id_and_epoch[1]
            and 0 <= batch.base_sequence <= entry.last_acked_sequence
        )
