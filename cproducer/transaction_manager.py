"""TransactionManager: the idempotent producer's bookkeeping (Java's TransactionManager).

It owns the producer id and epoch (from InitProducerId) and, per partition, the next sequence
number, the last acknowledged sequence and the batches in flight ordered by base sequence. The
RecordAccumulator asks it for sequences while draining; the Sender reports each batch's outcome.

When the broker loses or rejects our producer state (UNKNOWN_PRODUCER_ID, a real sequence gap), the
producer id is reset: a new InitProducerId is sent once no request is in flight, and the sequences
of the batches still waiting to be retried restart at 0 under the new id (Java's
``resetIdempotentProducerId`` + ``startSequencesAtBeginning``). That keeps the guarantee: no
duplicate and no reordering within a partition under retries.

Transactions (``transactional.id``) build on this class later.
"""

from __future__ import annotations

import bisect
import logging
import threading
from typing import Any, Dict, List, Optional, Tuple

from cproducer import errors
from cproducer.cluster import TopicPartition

log = logging.getLogger("cproducer.transaction_manager")

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1


class _PartitionEntry:
    __slots__ = (
        "producer_id_and_epoch",
        "next_sequence",
        "last_acked_sequence",
        "in_flight",
        "last_acked_offset",
    )

    def __init__(self, producer_id_and_epoch: Tuple[int, int]) -> None:
        self.producer_id_and_epoch = producer_id_and_epoch
        self.next_sequence = 0
        self.last_acked_sequence = -1
        self.in_flight: List[Any] = []  # ProducerBatch, sorted by base_sequence
        self.last_acked_offset = -1


def _last_sequence(batch: Any) -> int:
    return int(batch.base_sequence) + int(batch.record_count) - 1


class TransactionManager:
    """Idempotent-producer state. Thread-safe: the Sender thread and appending threads share it."""

    def __init__(self, transactional_id: Optional[str] = None) -> None:
        self.transactional_id = transactional_id
        self._lock = threading.RLock()
        self._pid_epoch: Tuple[int, int] = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        self._partitions: Dict[TopicPartition, _PartitionEntry] = {}
        self._reset_requested = False
        self._fatal: Optional[BaseException] = None
        self.resets = 0  # how many times the producer id was reset (observable for tests/metrics)

    # ------------------------------------------------------------------ producer id
    @property
    def producer_id_and_epoch(self) -> Tuple[int, int]:
        return self._pid_epoch

    def has_producer_id(self) -> bool:
        return self._pid_epoch[0] != NO_PRODUCER_ID

    def is_transactional(self) -> bool:
        return self.transactional_id is not None

    def needs_producer_id(self) -> bool:
        """True when the Sender should send InitProducerId (none yet, or a reset was requested)."""
        with self._lock:
            return self._fatal is None and (not self.has_producer_id() or self._reset_requested)

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
            log.info("producer id %d epoch %d", producer_id, epoch)

    def request_producer_id_reset(self, reason: str) -> None:
        with self._lock:
            if not self._reset_requested:
                log.info("resetting the idempotent producer id: %s", reason)
            self._reset_requested = True

    def transition_to_fatal_error(self, exc: BaseException) -> None:
        with self._lock:
            self._fatal = exc

    @property
    def fatal_error(self) -> Optional[BaseException]:
        return self._fatal

    # ------------------------------------------------------------------ drain-side (accumulator)
    def _entry(self, tp: TopicPartition) -> _PartitionEntry:
        entry = self._partitions.get(tp)
        if entry is None:
            entry = _PartitionEntry(self._pid_epoch)
            self._partitions[tp] = entry
        return entry

    def is_send_to_partition_allowed(self, tp: TopicPartition) -> bool:
        with self._lock:
            return self._fatal is None and self.has_producer_id() and not self._reset_requested

    def maybe_update_producer_id_and_epoch(self, tp: TopicPartition) -> None:
        with self._lock:
            entry = self._entry(tp)
            if entry.producer_id_and_epoch != self._pid_epoch and not entry.in_flight:
                entry.producer_id_and_epoch = self._pid_epoch
                entry.next_sequence = 0
                entry.last_acked_sequence = -1

    def sequence_number(self, tp: TopicPartition) -> int:
        with self._lock:
            return self._entry(tp).next_sequence

    def increment_sequence_number(self, tp: TopicPartition, count: int) -> None:
        with self._lock:
            entry = self._entry(tp)
            entry.next_sequence = (entry.next_sequence + count) & 0x7FFFFFFF

    def add_in_flight_batch(self, batch: Any) -> None:
        with self._lock:
            entry = self._entry(batch.topic_partition)
            keys = [b.base_sequence for b in entry.in_flight]
            entry.in_flight.insert(bisect.bisect_left(keys, batch.base_sequence), batch)

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
            try:
                entry.in_flight.remove(batch)
            except ValueError:
                pass

    def _start_sequences_at_beginning(self, tp: TopicPartition, entry: _PartitionEntry) -> None:
        """Renumber the batches still awaiting an answer/retry from 0 under the current id."""
        pid, epoch = self._pid_epoch
        seq = 0
        for batch in entry.in_flight:
            batch.reset_producer_state(pid, epoch, seq, self.is_transactional())
            seq += int(batch.record_count)
        entry.producer_id_and_epoch = self._pid_epoch
        entry.next_sequence = seq
        entry.last_acked_sequence = -1

    # ------------------------------------------------------------------ outcomes (Sender)
    def handle_completed_batch(self, batch: Any, base_offset: int) -> None:
        with self._lock:
            entry = self._partitions.get(batch.topic_partition)
            if entry is not None and batch.producer_id == entry.producer_id_and_epoch[0]:
                entry.last_acked_sequence = max(entry.last_acked_sequence, _last_sequence(batch))
                if base_offset >= 0:
                    last = base_offset + int(batch.record_count) - 1
                    entry.last_acked_offset = max(entry.last_acked_offset, last)
            self._remove_in_flight(batch)

    def handle_failed_batch(self, batch: Any, exc: BaseException, adjust_sequences: bool) -> None:
        """A batch completed with an error (it will not be retried)."""
        with self._lock:
            self._remove_in_flight(batch)
            if isinstance(exc, (errors.ProducerFencedError, errors.InvalidProducerEpochError)):
                self.transition_to_fatal_error(exc)
                return
            if isinstance(
                exc, (errors.OutOfOrderSequenceNumberError, errors.UnknownProducerIdError)
            ):
                self.request_producer_id_reset(f"{type(exc).__name__} for {batch.topic_partition}")
            elif adjust_sequences and batch.has_sequence():
                self._adjust_sequences_due_to_failed_batch(batch)

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
                other.reset_producer_state(
                    pid, epoch, other.base_sequence - count, self.is_transactional()
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
            if isinstance(error, errors.OutOfOrderSequenceNumberError):
                is_next = entry is not None and batch.base_sequence == entry.last_acked_sequence + 1
                if not is_next:
                    # an earlier batch has not landed yet: retry once it has
                    return True
                self.request_producer_id_reset(f"OUT_OF_ORDER_SEQUENCE_NUMBER for {tp}")
                return True
            return bool(getattr(error, "retriable", False))
