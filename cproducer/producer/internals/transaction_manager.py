"""TransactionManager: the idempotent producer's bookkeeping (Java's TransactionManager).

It owns the producer id and epoch (from InitProducerId) and, per partition, the next sequence
number, the last acknowledged sequence and the batches in flight ordered by base sequence. The
RecordAccumulator asks it for sequences while draining; the Sender reports each batch's outcome.

When the broker loses or rejects our producer state (UNKNOWN_PRODUCER_ID, a real sequence gap), the
producer id is reset: a new InitProducerId is sent once no request is in flight, and the sequences
of the batches still waiting to be retried restart at 0 under the new id (Java's
``resetIdempotentProducerId`` + ``startSequencesAtBeginning``). That keeps the guarantee: no
duplicate and no reordering within a partition under retries.

With ``transactional.id`` it is also Java's transactional state machine::

    UNINITIALIZED -init_transactions-> INITIALIZING -InitProducerId-> READY
    READY -begin_transaction-> IN_TRANSACTION -commit-> COMMITTING_TRANSACTION -EndTxn-> READY
                                              -abort->  ABORTING_TRANSACTION   -EndTxn-> READY
    IN_TRANSACTION / COMMITTING_TRANSACTION -a batch fails-> ABORTABLE_ERROR -abort-> ABORTING
    any -fenced, unauthorized, unexpected-> FATAL_ERROR

The producer's threads call ``initialize_transactions``/``begin_transaction``/``begin_commit``/
``begin_abort`` and wait on the returned ``TransactionalRequestResult``; the Sender thread asks
``next_transactional_request`` for the one request to send next, a handler
(``txn_request_handlers``: InitProducerId, FindCoordinator, AddPartitionsToTxn, AddOffsetsToTxn,
TxnOffsetCommit, EndTxn), sends it, and the handler reads the answer into this object. A
partition joins the transaction when the accumulator first wants to drain it
(``is_send_to_partition_allowed``): its batches wait for AddPartitionsToTxn, as Java's do.
"""

from __future__ import annotations

import bisect
import enum
import logging
import threading
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from cproducer import errors
from cproducer.cluster import Node, TopicPartition
from cproducer.producer.internals.txn_request_handlers import (
    AddOffsetsToTxnHandler,
    AddPartitionsToTxnHandler,
    EndTxnHandler,
    FindCoordinatorHandler,
    InitProducerIdHandler,
    TxnOffsetCommitHandler,
    TxnRequestHandler,
)
from cproducer.protocol import KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION

log = logging.getLogger("cproducer.producer.internals.transaction_manager")

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1


class TransactionState(enum.Enum):
    """Java's ``TransactionManager.State``."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"

    def __str__(self) -> str:
        return self.name


UNINITIALIZED = TransactionState.UNINITIALIZED
INITIALIZING = TransactionState.INITIALIZING
READY = TransactionState.READY
IN_TRANSACTION = TransactionState.IN_TRANSACTION
COMMITTING_TRANSACTION = TransactionState.COMMITTING_TRANSACTION
ABORTING_TRANSACTION = TransactionState.ABORTING_TRANSACTION
ABORTABLE_ERROR = TransactionState.ABORTABLE_ERROR
FATAL_ERROR = TransactionState.FATAL_ERROR

# Java's TransactionManager.State.isTransitionValid: target -> the states it may be entered from
_VALID_SOURCES = {
    INITIALIZING: (UNINITIALIZED, ABORTABLE_ERROR),
    READY: (INITIALIZING, COMMITTING_TRANSACTION, ABORTING_TRANSACTION),
    IN_TRANSACTION: (READY,),
    COMMITTING_TRANSACTION: (IN_TRANSACTION,),
    ABORTING_TRANSACTION: (IN_TRANSACTION, ABORTABLE_ERROR),
    ABORTABLE_ERROR: (IN_TRANSACTION, COMMITTING_TRANSACTION, ABORTABLE_ERROR),
}


class TransactionalRequestResult:
    """What ``init_transactions``/``commit_transaction``/``abort_transaction`` wait on."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self._done = threading.Event()
        self.error: Optional[BaseException] = None

    def done(self, error: Optional[BaseException] = None) -> None:
        if not self._done.is_set():
            self.error = error
            self._done.set()

    @property
    def is_completed(self) -> bool:
        return self._done.is_set()

    def await_result(self, timeout_s: Optional[float]) -> None:
        """Return once it succeeded; raise its error, or ``KafkaTimeoutError`` after ``timeout_s``
        (the operation goes on: calling the same method again waits for it again)."""
        if not self._done.wait(timeout_s):
            raise errors.KafkaTimeoutError(
                f"{self.operation} did not complete within {timeout_s} s; call it again to "
                "keep waiting"
            )
        if self.error is not None:
            raise self.error


class ConsumerGroupMetadata(NamedTuple):
    """Java's ConsumerGroupMetadata: the consumer group whose offsets a transaction commits.
    ``generation_id``/``member_id``/``group_instance_id`` let the group coordinator fence a
    zombie consumer (TxnOffsetCommit v3+); their defaults skip that check."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: Optional[str] = None


class PendingOffsets:
    """A ``send_offsets_to_transaction`` call on its way: AddOffsetsToTxn to the transaction
    coordinator (until ``added``), then TxnOffsetCommit to the group's coordinator."""

    __slots__ = ("group", "offsets", "result", "added", "group_coordinator")

    def __init__(
        self,
        group: ConsumerGroupMetadata,
        offsets: Dict[TopicPartition, Tuple[int, int, Optional[str]]],
        result: TransactionalRequestResult,
    ) -> None:
        self.group = group
        self.offsets = offsets  # tp -> (offset, leader_epoch, metadata)
        self.result = result
        self.added = False  # AddOffsetsToTxn succeeded: TxnOffsetCommit is next
        self.group_coordinator: Optional[Node] = None


# errors after which a request's outcome is unknown: it may have been written
_OUTCOME_UNKNOWN = (
    errors.KafkaConnectionError,
    errors.RequestTimedOutError,
    errors.KafkaTimeoutError,
)


class _PartitionEntry:
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


class TransactionManager:
    """Idempotent-producer state. Thread-safe: the Sender thread and appending threads share it."""

    def __init__(
        self,
        transactional_id: Optional[str] = None,
        transaction_timeout_ms: int = 60000,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        #: how long a retried transactional request waits (Java's retryBackoffMs: fixed)
        self.retry_backoff_ms = retry_backoff_ms
        #: called with the new state on every change (the producer's send fast path listens)
        self.on_state_change: Optional[Callable[[TransactionState], None]] = None
        self._state = UNINITIALIZED
        self.last_error: Optional[BaseException] = None
        self.coordinator: Optional[Node] = None  # the transaction coordinator
        self.partitions_in_transaction: set = set()
        self.pending_partitions: set = set()  # want AddPartitionsToTxn
        self.partitions_being_added: set = set()  # AddPartitionsToTxn in flight
        self.pending_result: Optional[TransactionalRequestResult] = None
        self.pending_offsets: Optional[PendingOffsets] = None
        self._offsets_added = False  # AddOffsetsToTxn succeeded in this transaction
        self._epoch_bump_required = False
        #: the Sender sends no transactional request before (its monotonic ms)
        self.retry_after_ms = 0
        self._lock = threading.RLock()
        self._pid_epoch: Tuple[int, int] = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        self._partitions: Dict[TopicPartition, _PartitionEntry] = {}
        self._reset_requested = False
        self._fatal: Optional[BaseException] = None
        self.resets = 0  # how many times the producer id was reset (observable for tests/metrics)
        # Java's partitionsWithUnresolvedSequences (idempotent producer): partitions where a
        # batch that had been sent again expired, so whether the broker wrote it is unknown, by
        # the sequence after it. No new batch goes to one until its batches in flight are done.
        self._unresolved: Dict[TopicPartition, int] = {}

    @property
    def state(self) -> TransactionState:
        return self._state

    @state.setter
    def state(self, value: TransactionState) -> None:
        self._state = value
        if self.on_state_change is not None:
            self.on_state_change(value)

    # ------------------------------------------------------------------ producer id
    @property
    def producer_id_and_epoch(self) -> Tuple[int, int]:
        return self._pid_epoch

    def has_producer_id(self) -> bool:
        return self._pid_epoch[0] != NO_PRODUCER_ID

    def is_transactional(self) -> bool:
        return self.transactional_id is not None

    def needs_producer_id(self) -> bool:
        """True when the Sender should send InitProducerId (none yet, or a reset was requested);
        a transactional producer's comes from ``next_transactional_request`` instead."""
        with self._lock:
            return (
                self.transactional_id is None
                and self._fatal is None
                and (not self.has_producer_id() or self._reset_requested)
            )

    def reset_requested(self) -> bool:
        return self._reset_requested

    def idempotent_init_producer_id(self) -> TxnRequestHandler:
        """The InitProducerId of an idempotent producer that ``needs_producer_id`` (any broker
        answers it); a transactional producer's comes from ``next_transactional_request``."""
        return InitProducerIdHandler(self)

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

    def authentication_failed(self, exc: BaseException, sequences_lost: bool) -> None:
        """Java's authenticationFailed: a transactional operation waiting (init, commit, abort,
        offsets) fails with ``exc`` and the producer cannot go on. ``sequences_lost``: batches
        with sequence numbers failed unsent, so an idempotent producer starts a new producer
        id."""
        if self.transactional_id is None:
            if sequences_lost:
                self.request_producer_id_reset("batches failed with an authentication error")
            return
        if self.pending_result is not None or self.pending_offsets is not None:
            self.transition_to_fatal_error(exc)

    def transition_to_fatal_error(self, exc: BaseException) -> None:
        with self._lock:
            self._fatal = exc
            if self.transactional_id is not None:
                self.state = FATAL_ERROR
                self._finish_pending(exc)
                self._finish_pending_offsets(exc)

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
            return self._send_allowed(tp)

    def _send_allowed(self, tp: TopicPartition) -> bool:
        # is_send_to_partition_allowed, with the lock held
        if self._fatal is not None or not self.has_producer_id() or self._reset_requested:
            return False
        if self.transactional_id is None or tp in self.partitions_in_transaction:
            return True
        if self.state in (IN_TRANSACTION, COMMITTING_TRANSACTION):
            # the partition joins the transaction first (the Sender sends AddPartitionsToTxn)
            if tp not in self.partitions_being_added:
                self.pending_partitions.add(tp)
        return False

    def sequence_number(self, tp: TopicPartition) -> int:
        with self._lock:
            return self._entry(tp).next_sequence

    def add_in_flight_batch(self, batch: Any) -> None:
        with self._lock:
            self._add_in_flight(self._entry(batch.topic_partition), batch)

    @staticmethod
    def _add_in_flight(entry: _PartitionEntry, batch: Any) -> None:
        in_flight = entry.in_flight
        seq = batch.base_sequence
        if not in_flight or in_flight[-1].base_sequence < seq:
            in_flight.append(batch)  # a newly drained batch: the highest sequence so far
        else:  # a retried or split batch goes back among them
            keys = [b.base_sequence for b in in_flight]
            in_flight.insert(bisect.bisect_left(keys, seq), batch)

    # The accumulator's drain makes one call of each per batch (a lock and a Python call cost
    # more than the bookkeeping itself, and the Sender thread drains every batch).
    def should_stop_drain(self, tp: TopicPartition, base_sequence: int) -> bool:
        """Java's ``shouldStopDrainBatchesForPartition``: True when the first batch queued for
        ``tp`` (``base_sequence`` -1 while it has none) may not be drained now. The partition
        is not (yet) in the transaction, there is no usable producer id, or that batch is a
        retried one and an earlier sequence of the partition is still in flight."""
        with self._lock:
            if not self._send_allowed(tp):
                return True
            if base_sequence == NO_SEQUENCE:
                # Java: no new batch while the partition's earlier sequences are unresolved
                return tp in self._unresolved
            entry = self._partitions.get(tp)
            if entry is None:
                return False
            in_flight = entry.in_flight
            return bool(in_flight) and in_flight[0].base_sequence != base_sequence

    def sequence_batch(self, batch: Any) -> None:
        """Java's drain step for a batch without a sequence: the producer id, epoch and the
        partition's next sequence go into the batch, the sequence moves past its records and
        the batch is in flight, under one lock."""
        with self._lock:
            pid_epoch = self._pid_epoch
            entry = self._entry(batch.topic_partition)
            if entry.producer_id_and_epoch != pid_epoch and not entry.in_flight:
                # Java's maybeUpdateProducerIdAndEpoch: nothing in flight under an older id,
                # the partition starts again at sequence 0 under the current one
                entry.producer_id_and_epoch = pid_epoch
                entry.next_sequence = 0
                entry.last_acked_sequence = -1
                entry.outcome_unknown = False
            seq = entry.next_sequence
            batch.set_producer_state(
                pid_epoch[0], pid_epoch[1], seq, self.transactional_id is not None
            )
            entry.next_sequence = (seq + batch.record_count) & 0x7FFFFFFF
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

    def _start_sequences_at_beginning(self, tp: TopicPartition, entry: _PartitionEntry) -> None:
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

    def handle_failed_batch(self, batch: Any, exc: BaseException, adjust_sequences: bool) -> None:
        """A batch completed with an error (it will not be retried)."""
        with self._lock:
            self._remove_in_flight(batch)
            if isinstance(exc, errors.ProducerFencedError) or (
                isinstance(exc, errors.InvalidProducerEpochError) and self.transactional_id is None
            ):
                self.transition_to_fatal_error(exc)
                return
            # a transactional Produce answered INVALID_PRODUCER_EPOCH goes on below: abortable,
            # as in Java since KIP-588 (Kafka 2.7 answers Produce so instead of PRODUCER_FENCED).
            # The coordinator bumped the epoch: a newer producer with the same id, or the
            # transaction timed out. The abort's EndTxn tells which (PRODUCER_FENCED: fatal)
            state_lost = isinstance(
                exc, (errors.OutOfOrderSequenceNumberError, errors.UnknownProducerIdError)
            )
            if self.transactional_id is not None:
                # Java's maybeTransitionToErrorState: a batch failed outside a commit or abort
                # (the application still sends): the epoch is bumped before the next
                # transaction, and its sequences restart (KIP-360)
                completing = self.is_completing()
                if self.state in (IN_TRANSACTION, COMMITTING_TRANSACTION, ABORTABLE_ERROR):
                    self.transition_to_abortable_error(exc)
                if state_lost or not completing:
                    self._epoch_bump_required = True
                if not state_lost and adjust_sequences and batch.has_sequence():
                    # the broker did not write it (e.g. TRANSACTION_ABORTABLE): the batches after
                    # it, and the next transaction's, must not leave a gap in the sequence
                    self._adjust_sequences_due_to_failed_batch(batch)
                return
            if state_lost:
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
            if entry is not None and isinstance(error, _OUTCOME_UNKNOWN):
                entry.outcome_unknown = True
            if isinstance(error, errors.OutOfOrderSequenceNumberError):
                is_next = entry is not None and batch.base_sequence == entry.last_acked_sequence + 1
                if entry is not None and self._passed_by_later_batch(entry, batch):
                    # The broker wrote later sequences of this id before this batch: a broker
                    # with no state for the id takes any first sequence, e.g. a new leader that
                    # answered this batch NOT_LEADER_OR_FOLLOWER and took the next request a
                    # moment later. Waiting cannot close that gap. Every attempt was answered
                    # (nothing of this batch can be in the log), so the idempotent producer
                    # sends it again under a new id; a transaction fails it (abortable).
                    if self.transactional_id is not None:
                        return False
                    if entry.outcome_unknown:
                        # an attempt may have been written: not under a new id (twice), but
                        # under its own until delivery.timeout.ms, as Java retries every
                        # OUT_OF_ORDER_SEQUENCE_NUMBER of an idempotent producer; the broker
                        # may still answer DUPLICATE_SEQUENCE_NUMBER, else the batch expires
                        return True
                    self.request_producer_id_reset(
                        f"OUT_OF_ORDER_SEQUENCE_NUMBER for {tp}: later sequences were written"
                    )
                    return True
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

    @staticmethod
    def _passed_by_later_batch(entry: _PartitionEntry, batch: Any) -> bool:
        return (
            batch.producer_id == entry.producer_id_and_epoch[0]
            and batch.producer_epoch == entry.producer_id_and_epoch[1]
            and 0 <= batch.base_sequence <= entry.last_acked_sequence
        )

    # ------------------------------------------------------------------ transactions: API side
    def _require_transactional(self, what: str) -> None:
        if self.transactional_id is None:
            raise errors.IllegalStateError(
                f"{what} needs a transactional producer: set transactional.id"
            )

    def _transition(self, target: TransactionState) -> None:
        """Java's transitionTo: refuse what the state machine does not allow."""
        if self.state == FATAL_ERROR:
            self._raise_fatal(f"cannot go to {target}")
        if self.state not in _VALID_SOURCES[target]:
            raise errors.IllegalStateError(f"invalid transition from {self.state} to {target}")
        self.state = target

    def _raise_fatal(self, what: str) -> None:
        """The fatal error itself (e.g. ``ProducerFencedError``), as Java rethrows it."""
        err = self._fatal
        if isinstance(err, errors.KafkaError):
            raise err
        raise errors.IllegalStateError(f"{what}: the producer hit a fatal error ({err!r})") from err

    def _finish_pending(self, error: Optional[BaseException]) -> None:
        if self.pending_result is not None:
            self.pending_result.done(error)
            self.pending_result = None

    def _finish_pending_offsets(self, error: Optional[BaseException]) -> None:
        if self.pending_offsets is not None:
            self.pending_offsets.result.done(error)
            self.pending_offsets = None

    def initialize_transactions(self) -> TransactionalRequestResult:
        with self._lock:
            self._require_transactional("init_transactions")
            if self.state == INITIALIZING and self.pending_result is not None:
                return self.pending_result  # a retry after a timeout waits for the same request
            self._transition(INITIALIZING)
            self._pid_epoch = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            self.pending_result = TransactionalRequestResult("init_transactions")
            return self.pending_result

    def begin_transaction(self) -> None:
        with self._lock:
            self._require_transactional("begin_transaction")
            if self.state == UNINITIALIZED or (
                self.state == INITIALIZING and not self.has_producer_id()
            ):
                raise errors.IllegalStateError(
                    "begin_transaction before init_transactions completed"
                )
            self._transition(IN_TRANSACTION)

    def begin_commit(self) -> TransactionalRequestResult:
        with self._lock:
            self._require_transactional("commit_transaction")
            if self.state == COMMITTING_TRANSACTION and self.pending_result is not None:
                return self.pending_result
            if self.state == ABORTABLE_ERROR:
                raise errors.TransactionAbortableError(
                    "cannot commit: a record of this transaction failed "
                    f"({self.last_error!r}); abort_transaction() is the way out"
                ) from self.last_error
            self._transition(COMMITTING_TRANSACTION)
            self.pending_result = TransactionalRequestResult("commit_transaction")
            return self.pending_result

    def begin_abort(self) -> TransactionalRequestResult:
        with self._lock:
            self._require_transactional("abort_transaction")
            if self.state == ABORTING_TRANSACTION and self.pending_result is not None:
                return self.pending_result
            self._transition(ABORTING_TRANSACTION)
            self.pending_partitions.clear()
            self._finish_pending_offsets(
                errors.TransactionAbortedError("the transaction was aborted")
            )
            self.pending_result = TransactionalRequestResult("abort_transaction")
            return self.pending_result

    def send_offsets_to_transaction(
        self,
        offsets: Dict[TopicPartition, Tuple[int, int, Optional[str]]],
        group: ConsumerGroupMetadata,
    ) -> TransactionalRequestResult:
        with self._lock:
            self._require_transactional("send_offsets_to_transaction")
            if self.state == FATAL_ERROR:
                self._raise_fatal("cannot send offsets")
            if self.state != IN_TRANSACTION:
                raise errors.IllegalStateError(
                    f"send_offsets_to_transaction in state {self.state}: it needs an open "
                    "transaction (begin_transaction())"
                )
            if self.pending_offsets is not None:
                raise errors.IllegalStateError(
                    "send_offsets_to_transaction: an earlier call has not completed yet"
                )
            result = TransactionalRequestResult("send_offsets_to_transaction")
            self.pending_offsets = PendingOffsets(group, offsets, result)
            return result

    def offsets_stage_done(self, error: Optional[BaseException] = None) -> None:
        """The Sender moves a pending ``send_offsets_to_transaction`` on, or ends it."""
        with self._lock:
            po = self.pending_offsets
            if po is None:
                return
            if error is None and not po.added:
                po.added = True
                self._offsets_added = True
                return
            self._finish_pending_offsets(error)
            if error is not None and not isinstance(error, errors.ProducerFencedError):
                self.transition_to_abortable_error(error)

    def transition_to_abortable_error(self, exc: BaseException) -> None:
        with self._lock:
            if self.state == ABORTING_TRANSACTION or self.state == FATAL_ERROR:
                return
            self.last_error = exc
            committing = self.state == COMMITTING_TRANSACTION
            self.state = ABORTABLE_ERROR
            self._finish_pending_offsets(
                errors.TransactionAbortableError(f"a record failed ({exc!r})")
            )
            if committing:
                self._finish_pending(
                    errors.TransactionAbortableError(
                        f"the transaction cannot be committed: a record failed ({exc!r}); "
                        "abort_transaction() is the way out"
                    )
                )

    def fail_if_not_ready_for_send(self) -> None:
        """Java's failIfNotReadyForSend: what ``send`` raises on a transactional producer."""
        state = self.state
        if state == IN_TRANSACTION:
            return
        if state == FATAL_ERROR:
            self._raise_fatal("cannot send")
        if state == ABORTABLE_ERROR:
            raise errors.TransactionAbortableError(
                f"cannot send: a record of this transaction failed ({self.last_error!r}); "
                "abort_transaction() is the way out"
            ) from self.last_error
        if not self.has_producer_id():
            raise errors.IllegalStateError(
                "cannot send before init_transactions() completed on a transactional producer"
            )
        raise errors.IllegalStateError(
            f"cannot send in state {state}: call begin_transaction() first"
        )

    # ------------------------------------------------------------------ transactions: Sender side
    def awaiting_partitions(self) -> bool:
        return bool(self.pending_partitions or self.partitions_being_added)

    def has_ongoing_transaction(self) -> bool:
        return self.state in (
            IN_TRANSACTION,
            COMMITTING_TRANSACTION,
            ABORTING_TRANSACTION,
            ABORTABLE_ERROR,
        )

    def is_completing(self) -> bool:
        return self.state in (COMMITTING_TRANSACTION, ABORTING_TRANSACTION)

    def next_transactional_request(
        self, accumulator_has_incomplete: bool
    ) -> Optional[TxnRequestHandler]:
        """The handler of the one request the Sender should send now, or None."""
        with self._lock:
            state = self.state
            if state == FATAL_ERROR or state == UNINITIALIZED:
                return None
            if state == INITIALIZING or (state == READY and self._epoch_bump_required):
                if self.has_producer_id() and not self._epoch_bump_required:
                    return None
                return self._via_coordinator(InitProducerIdHandler(self))
            if self.pending_partitions and state in (IN_TRANSACTION, COMMITTING_TRANSACTION):
                if self.partitions_being_added:
                    return None  # one AddPartitionsToTxn at a time
                if self.coordinator is None:
                    return self._find_coordinator()
                batch = sorted(self.pending_partitions)
                self.partitions_being_added = set(batch)
                self.pending_partitions.difference_update(batch)
                return AddPartitionsToTxnHandler(self, batch)
            po = self.pending_offsets
            if po is not None and state in (IN_TRANSACTION, COMMITTING_TRANSACTION):
                if not po.added:
                    return self._via_coordinator(AddOffsetsToTxnHandler(self, po.group.group_id))
                if po.group_coordinator is None:
                    return FindCoordinatorHandler(self, KEY_TYPE_GROUP, po.group.group_id)
                return TxnOffsetCommitHandler(self, po)
            if state in (COMMITTING_TRANSACTION, ABORTING_TRANSACTION):
                if accumulator_has_incomplete or self.partitions_being_added:
                    return None
                if self.pending_partitions and state == COMMITTING_TRANSACTION:
                    return None
                if not self.partitions_in_transaction and not self._offsets_added:
                    # nothing was written: no EndTxn needed (Java skips it too)
                    self._complete_transaction()
                    return None
                return self._via_coordinator(
                    EndTxnHandler(self, committed=state == COMMITTING_TRANSACTION)
                )
            return None

    def _via_coordinator(self, handler: TxnRequestHandler) -> TxnRequestHandler:
        """``handler``, or the lookup of the transaction coordinator it needs first."""
        return handler if self.coordinator is not None else self._find_coordinator()

    def _find_coordinator(self) -> TxnRequestHandler:
        return FindCoordinatorHandler(self, KEY_TYPE_TRANSACTION, str(self.transactional_id))

    def coordinator_unknown(self) -> None:
        with self._lock:
            self.coordinator = None

    def add_partitions_failed(self, retry: bool) -> None:
        """AddPartitionsToTxn did not succeed for the partitions in flight: want them again."""
        with self._lock:
            if retry:
                self.pending_partitions |= self.partitions_being_added
            self.partitions_being_added = set()

    def partitions_added(self, added: List[TopicPartition]) -> None:
        with self._lock:
            self.partitions_in_transaction.update(added)
            self.partitions_being_added.difference_update(added)

    def producer_id_initialized(self, producer_id: int, epoch: int) -> None:
        with self._lock:
            self._epoch_bump_required = False
            self.set_producer_id_and_epoch(producer_id, epoch)
            if self.state == INITIALIZING:
                self.state = READY
            self._finish_pending(None)

    def end_txn_succeeded(self) -> None:
        with self._lock:
            self._complete_transaction()

    def _complete_transaction(self) -> None:
        self._offsets_added = False
        self.partitions_in_transaction.clear()
        self.pending_partitions.clear()
        self.partitions_being_added.clear()
        self.last_error = None
        if self._epoch_bump_required:
            # the epoch is bumped before the next transaction: keep the caller waiting for it
            self.state = INITIALIZING
            return
        self.state = READY
        self._finish_pending(None)
