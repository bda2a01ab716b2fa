"""TransactionManager: the idempotent producer's bookkeeping (Java's TransactionManager).

The producer id and the sequences of each partition are its base, ``IdempotentState``
(``idempotent_state``); the states and the transition table are in ``transaction_state``; this
module has what a failed batch does to them, and the requests of a transaction.

With ``transactional.id`` it is also Java's transactional state machine (its diagram is in
``transaction_state``). The producer's threads call
``initialize_transactions``/``begin_transaction``/``begin_commit``/``begin_abort`` and wait on the
returned ``TransactionalRequestResult``; the Sender thread asks ``next_transactional_request`` for
the one request to send next, a handler (``txn_request_handlers``: InitProducerId, FindCoordinator,
AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn), sends it, and the handler reads the
answer into this object. A partition joins the transaction when the accumulator first wants to drain
it (``is_send_to_partition_allowed``): its batches wait for AddPartitionsToTxn, as Java's do.

Transactions version 2 (KIP-890 part 2), when the cluster has finalized ``transaction.version``
2 or more (the brokers' ApiVersions answers, ``FinalizedFeatures``; read at
``initialize_transactions`` and at each ``begin_transaction``, as Java's
``maybeUpdateTransactionV2Enabled`` does): a partition is in the transaction as soon as a batch
of it is drained, and Produce v12 has the broker add it (no AddPartitionsToTxn); offsets go with
TxnOffsetCommit v5 alone (no AddOffsetsToTxn); EndTxn v5's coordinator bumps the epoch at the
end of every transaction and answers the new one, which the producer takes, its sequences
restarting at 0. A late write of an ended transaction, under its old epoch, is then refused
instead of opening (or joining) a transaction no one will end: KIP-890's hanging transactions.
The client-side epoch bump after an abortable error (KIP-360's InitProducerId) is left out: the
abort's EndTxn bumps it. Otherwise (version 1, or a broker that names no features) the requests
and their versions are those of before: Produce v11, EndTxn v4, TxnOffsetCommit v4 at most.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional, Tuple

from cproducer import errors
from cproducer.cluster import Node, TopicPartition
from cproducer.producer.internals.idempotent_state import IdempotentState, remove_batch
from cproducer.producer.internals.transaction_state import (
    ABORTABLE_ERROR,
    ABORTING_TRANSACTION,
    COMMITTING_TRANSACTION,
    FATAL_ERROR,
    IN_TRANSACTION,
    INITIALIZING,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    READY,
    UNINITIALIZED,
    VALID_SOURCES,
    ConsumerGroupMetadata,
    PendingOffsets,
    TransactionalRequestResult,
    TransactionState,
)
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
from cproducer.protocol.api_versions import NO_FEATURES_EPOCH, FinalizedFeatures

log = logging.getLogger("cproducer.producer.internals.transaction_manager")

#: the finalized feature that names the cluster's transactions version, and the first level of
#: transactions version 2 (Java's TransactionVersion.TV_2)
TRANSACTION_VERSION_FEATURE = "transaction.version"
TRANSACTION_VERSION_2 = 2

# the names other modules import from here
__all__ = [
    "ABORTABLE_ERROR",
    "ABORTING_TRANSACTION",
    "COMMITTING_TRANSACTION",
    "FATAL_ERROR",
    "INITIALIZING",
    "IN_TRANSACTION",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "READY",
    "UNINITIALIZED",
    "ConsumerGroupMetadata",
    "PendingOffsets",
    "TransactionManager",
    "TransactionState",
    "TransactionalRequestResult",
    "remove_batch",
]


class TransactionManager(IdempotentState):
    """Idempotent-producer state. Thread-safe: the Sender thread and appending threads share it."""

    def __init__(
        self,
        transactional_id: Optional[str] = None,
        transaction_timeout_ms: int = 60000,
        retry_backoff_ms: int = 100,
    ) -> None:
        super().__init__(transactional_id)
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
        #: the network client's view of the cluster's finalized features (the Sender sets it);
        #: None: unknown, transactions version 1
        self.finalized_features: Optional[FinalizedFeatures] = None
        self._features_epoch = NO_FEATURES_EPOCH  # the epoch of the features last read
        self._transaction_v2 = False
        #: librdkafka's rule (the confluent facade sets it): a transactional Produce answered
        #: INVALID_PRODUCER_EPOCH means a newer producer took the id, fatal at once; Java's
        #: makes it abortable and lets the abort's EndTxn say whether it was a fence
        self.invalid_epoch_is_fenced = False

    @property
    def state(self) -> TransactionState:
        return self._state

    @state.setter
    def state(self, value: TransactionState) -> None:
        self._state = value
        if self.on_state_change is not None:
            self.on_state_change(value)

    # ------------------------------------------------------------------ transactions version
    def maybe_update_transaction_v2_enabled(self) -> None:
        """Java's maybeUpdateTransactionV2Enabled: the transactions version from the newest
        finalized features seen. Called where a transaction cannot be under way on the wire
        (``initialize_transactions``, ``begin_transaction``): the version of each transaction
        stays the one it began with, even if the cluster's level changes while it runs."""
        features = self.finalized_features
        if features is None:
            return
        epoch, levels = features.snapshot()
        with self._lock:
            if epoch <= self._features_epoch:
                return
            self._features_epoch = epoch
            level = levels.get(TRANSACTION_VERSION_FEATURE)
            enabled = level is not None and level >= TRANSACTION_VERSION_2
            if enabled != self._transaction_v2:
                log.info(
                    "transactions version %d (the cluster's %s is %s)",
                    2 if enabled else 1,
                    TRANSACTION_VERSION_FEATURE,
                    level,
                )
            self._transaction_v2 = enabled

    def is_transaction_v2_enabled(self) -> bool:
        """True when this transaction uses transactions version 2 (KIP-890 part 2)."""
        return self._transaction_v2

    # ------------------------------------------------------------------ producer id and errors
    def needs_producer_id(self) -> bool:
        """True when the Sender should send InitProducerId (none yet, or a reset was requested);
        a transactional producer's comes from ``next_transactional_request`` instead."""
        with self._lock:
            return (
                self.transactional_id is None
                and self._fatal is None
                and (not self.has_producer_id() or self._reset_requested)
            )

    def idempotent_init_producer_id(self) -> TxnRequestHandler:
        """The InitProducerId of an idempotent producer that ``needs_producer_id`` (any broker
        answers it); a transactional producer's comes from ``next_transactional_request``."""
        return InitProducerIdHandler(self)

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

    # ------------------------------------------------------------------ drain-side (accumulator)
    def is_send_to_partition_allowed(self, tp: TopicPartition) -> bool:
        with self._lock:
            return self._send_allowed(tp)

    def _send_allowed(self, tp: TopicPartition) -> bool:
        # is_send_to_partition_allowed, with the lock held
        # (has_producer_id inlined: the drain asks this for every batch it takes)
        if self._fatal is not None or self._pid_epoch[0] == NO_PRODUCER_ID or self._reset_requested:
            return False
        if self.transactional_id is None or tp in self.partitions_in_transaction:
            return True
        if self.state in (IN_TRANSACTION, COMMITTING_TRANSACTION) and self._transaction_v2:
            # transactions version 2: the Produce (v12) adds the partition (Java's
            # maybeAddPartition puts it straight into partitionsInTransaction); the EndTxn that
            # follows is needed because it is in the set
            self.partitions_in_transaction.add(tp)
            return True
        if self.state in (IN_TRANSACTION, COMMITTING_TRANSACTION):
            # the partition joins the transaction first (the Sender sends AddPartitionsToTxn)
            if tp not in self.partitions_being_added:
                self.pending_partitions.add(tp)
        return False

    # ------------------------------------------------------------------ outcomes (Sender)
    def handle_failed_batch(self, batch: Any, exc: BaseException, adjust_sequences: bool) -> None:
        """A batch completed with an error (it will not be retried)."""
        with self._lock:
            self._remove_in_flight(batch)
            if isinstance(exc, errors.ProducerFencedError) or (
                isinstance(exc, errors.InvalidProducerEpochError)
                and (self.transactional_id is None or self.invalid_epoch_is_fenced)
            ):
                # (under transactions version 2 no AddPartitionsToTxn goes first to be answered
                # PRODUCER_FENCED: the Produce meets the fence, and is answered this)
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
                if (state_lost or not completing) and not self._transaction_v2:
                    # (Java's needToTriggerEpochBumpFromClient: under transactions version 2
                    # the abort's EndTxn bumps the epoch, and its answer restarts the sequences)
                    self._epoch_bump_required = True
                if not state_lost and adjust_sequences and batch.has_sequence():
                    # the broker did not write it (e.g. TRANSACTION_ABORTABLE): the batches after
                    # it, and the next transaction's, must not leave a gap in the sequence
                    self._adjust_sequences_due_to_failed_batch(batch)
                return
            if state_lost and self._passed_by_later(batch):
                # the sequences after it are in the log, in order: the id goes on
                return
            if state_lost:
                self.request_producer_id_reset(f"{type(exc).__name__} for {batch.topic_partition}")
            elif adjust_sequences and batch.has_sequence():
                self._adjust_sequences_due_to_failed_batch(batch)

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
        if self.state not in VALID_SOURCES[target]:
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
            self.maybe_update_transaction_v2_enabled()
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
            self.maybe_update_transaction_v2_enabled()

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
                if not po.added and self._transaction_v2:
                    # transactions version 2: TxnOffsetCommit v5 adds the group's offsets to the
                    # transaction (Java skips AddOffsetsToTxn); the EndTxn is needed from now on
                    po.added = True
                    self._offsets_added = True
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

    def end_txn_succeeded(self, producer_id: int = NO_PRODUCER_ID, epoch: int = -1) -> None:
        """The transaction ended. ``producer_id``/``epoch``: EndTxn v5's answer, the id and epoch
        the coordinator bumped to (transactions version 2); -1 from older versions."""
        with self._lock:
            if producer_id != NO_PRODUCER_ID:
                # Java's setProducerIdAndEpoch and resetSequenceNumbers: the next transaction
                # writes under the new epoch, each partition from sequence 0. (Not counted in
                # ``resets``: it is how every transaction ends, not a lost producer state.)
                self._pid_epoch = (producer_id, epoch)
                self._partitions.clear()
                self._unresolved.clear()
                log.debug("producer id %d epoch %d (EndTxn)", producer_id, epoch)
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
