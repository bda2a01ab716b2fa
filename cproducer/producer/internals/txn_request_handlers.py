"""The transactional requests, one handler per API (Java's ``TransactionManager.TxnRequestHandler``
subclasses): InitProducerId, FindCoordinator, AddPartitionsToTxn, AddOffsetsToTxn,
TxnOffsetCommit, EndTxn.

The ``TransactionManager`` decides which request comes next (``next_transactional_request``) and
hands out its handler; the Sender sends what ``build_request`` makes to ``destination()`` (any
node when that is None) and passes the answer to ``on_complete``. A handler reads the answer and
moves the TransactionManager on: success, a retry after ``retry.backoff.ms`` (its
``retry_after_ms``), a coordinator to look up again, an abortable or a fatal error. One is in
flight at a time. Handlers run on the Sender thread; the TransactionManager's methods they call
take its lock.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar, List, Optional, Type

from cproducer import errors
from cproducer.cluster import Node, TopicPartition
from cproducer.protocol import (
    KEY_TYPE_GROUP,
    KEY_TYPE_TRANSACTION,
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)
from cproducer.protocol.end_txn import (
    LAST_VERSION_BEFORE_TRANSACTION_V2 as END_TXN_LAST_VERSION_BEFORE_TRANSACTION_V2,
)
from cproducer.protocol.txn_offsets import LAST_TXN_OFFSET_COMMIT_BEFORE_TRANSACTION_V2

if TYPE_CHECKING:
    from cproducer.network.network_client import ClientResponse
    from cproducer.producer.internals.transaction_manager import (
        PendingOffsets,
        TransactionManager,
    )

log = logging.getLogger("cproducer.producer.internals.txn_request_handlers")

#: answered with one of these, a transactional request ends the producer (Java: fatalError)
FATAL_TXN_ERRORS = (
    errors.ProducerFencedError,
    errors.InvalidProducerEpochError,
    errors.TransactionalIdAuthorizationFailedError,
)
#: ... and with one of these, the coordinator is looked up again
COORDINATOR_MOVED = (errors.NotCoordinatorError, errors.CoordinatorNotAvailableError)
#: Java's ADD_PARTITIONS_RETRY_BACKOFF_MS: AddPartitionsToTxn is retried sooner (the previous
#: transaction is usually about to complete)
ADD_PARTITIONS_RETRY_BACKOFF_MS = 20
_NOT_ATTEMPTED = errors.OperationNotAttemptedError.errno


def fenced(err: errors.KafkaError) -> errors.KafkaError:
    """What a fatal coordinator answer ends the producer with: INVALID_PRODUCER_EPOCH (which a
    coordinator answers the request versions older than KIP-588's, e.g. EndTxn v0-1, instead of
    PRODUCER_FENCED) is PRODUCER_FENCED, as in Java's handlers; anything else is itself."""
    if not isinstance(err, errors.InvalidProducerEpochError):
        return err
    out = errors.ProducerFencedError(
        "there is a newer producer with the same transactional.id (the coordinator answered "
        "INVALID_PRODUCER_EPOCH)"
    )
    out.__cause__ = err
    return out


class TxnRequestHandler:
    """One transactional request and what its answer does."""

    #: the protocol request class (its API key picks the version)
    request_class: ClassVar[Type[Any]]

    def __init__(self, tm: TransactionManager) -> None:
        self.tm = tm

    @property
    def transactional_id(self) -> str:
        txn_id = self.tm.transactional_id
        assert txn_id is not None, "only a transactional producer sends this request"
        return txn_id

    def destination(self) -> Optional[Node]:
        """The node to send to; None: any (the Sender takes the least-loaded one)."""
        return self.tm.coordinator

    def coordinator_lost(self) -> None:
        """The destination's connection failed: look it up again."""
        self.tm.coordinator_unknown()

    def reenqueue(self) -> None:
        """The request did not get through: it is wanted again (Java's reenqueue)."""

    #: the newest version a transaction on transactions version 1 may send, for a request
    #: whose next version means version 2 (EndTxn, TxnOffsetCommit); None: no such version
    last_version_before_transaction_v2: ClassVar[Optional[int]] = None

    def pick_version(self, version: int) -> int:
        """The version to send, from the highest both sides speak (``version``): that one,
        unless it would mean transactions version 2 and this transaction is on version 1."""
        last = self.last_version_before_transaction_v2
        if last is None or self.tm.is_transaction_v2_enabled():
            return version
        return min(version, last)

    def build_request(self, version: int) -> Any:
        """The request at ``version`` (raises a KafkaError when the broker's versions cannot
        do it: the Sender makes that fatal)."""
        raise NotImplementedError

    def handle_response(self, body: Any, now: int) -> None:
        raise NotImplementedError

    def on_complete(self, response: ClientResponse, now: int) -> None:
        """Java's onComplete: a lost answer retries (with a new coordinator lookup), an answer
        goes to ``handle_response``."""
        body = response.response
        if response.disconnected or response.timed_out or body is None:
            self.coordinator_lost()
            self.reenqueue()
            self.retry(now)
            return
        self.handle_response(body, now)

    def retry(self, now: int, backoff_ms: Optional[int] = None) -> None:
        """Send the next transactional request only after the backoff."""
        self.tm.retry_after_ms = now + (
            self.tm.retry_backoff_ms if backoff_ms is None else backoff_ms
        )

    def handle_error(self, err: errors.KafkaError, now: int) -> None:
        """What most answers do with an error: find the coordinator again when it moved, retry
        a retriable one, make the transaction abortable on TRANSACTION_ABORTABLE (KIP-890: the
        broker will not commit it), end the producer on anything else."""
        if isinstance(err, errors.TransactionAbortableError):
            log.info("%s: %s; the transaction must be aborted", self.request_class.__name__, err)
            self.tm.transition_to_abortable_error(err)
        elif isinstance(err, COORDINATOR_MOVED):
            self.tm.coordinator_unknown()
            self.retry(now)
        elif err.retriable:  # load in progress, concurrent transactions
            self.retry(now)
        else:
            log.error("%s failed: %s", self.request_class.__name__, err)
            self.tm.transition_to_fatal_error(fenced(err))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class InitProducerIdHandler(TxnRequestHandler):
    """A producer id and epoch: from the transaction coordinator for ``transactional.id`` (a
    bumped epoch when the producer has one: KIP-360), from any broker for an idempotent producer.
    """

    request_class = InitProducerIdRequest

    def __init__(self, tm: TransactionManager) -> None:
        super().__init__(tm)
        self.transactional = tm.is_transactional()

    def destination(self) -> Optional[Node]:
        return self.tm.coordinator if self.transactional else None

    def coordinator_lost(self) -> None:
        if self.transactional:
            self.tm.coordinator_unknown()

    def build_request(self, version: int) -> InitProducerIdRequest:
        tm = self.tm
        if not self.transactional:
            return InitProducerIdRequest(None, tm.transaction_timeout_ms, -1, -1)
        pid, epoch = tm.producer_id_and_epoch
        if pid >= 0 and version < 3:
            raise errors.IncompatibleBrokerVersion(
                f"bumping the producer epoch needs InitProducerId v3+, the broker has v{version}"
            )
        return InitProducerIdRequest(tm.transactional_id, tm.transaction_timeout_ms, pid, epoch)

    def handle_response(self, body: Any, now: int) -> None:
        tm = self.tm
        err = errors.exception_for(body.error_code)
        if err is None:
            if self.transactional:
                tm.producer_id_initialized(body.producer_id, body.producer_epoch)
            else:
                tm.set_producer_id_and_epoch(body.producer_id, body.producer_epoch)
        elif self.transactional:
            self.handle_error(err, now)
        elif err.retriable or isinstance(err, errors.UnknownServerError):
            log.info("InitProducerId failed (%s); retrying", err)
            self.retry(now)
        else:
            log.error("InitProducerId failed fatally: %s", err)
            tm.transition_to_fatal_error(err)


class FindCoordinatorHandler(TxnRequestHandler):
    """The coordinator of the transaction (``KEY_TYPE_TRANSACTION``) or of the consumer group
    whose offsets the transaction commits (``KEY_TYPE_GROUP``); asked of any broker."""

    request_class = FindCoordinatorRequest

    def __init__(self, tm: TransactionManager, key_type: int, key: str) -> None:
        super().__init__(tm)
        self.key_type = key_type
        self.key = key

    def destination(self) -> Optional[Node]:
        return None

    def coordinator_lost(self) -> None:
        pass  # it went to any node: nothing to forget

    def build_request(self, version: int) -> FindCoordinatorRequest:
        return FindCoordinatorRequest(self.key, self.key_type)

    def handle_response(self, body: Any, now: int) -> None:
        tm = self.tm
        err = errors.exception_for(body.error_code)
        node = Node(body.node_id, body.host, body.port)
        if self.key_type == KEY_TYPE_GROUP:
            po = tm.pending_offsets
            if err is None and po is not None:
                po.group_coordinator = node
            elif err is not None and not err.retriable:
                tm.offsets_stage_done(err)  # e.g. GROUP_AUTHORIZATION_FAILED: abortable
            else:
                self.retry(now)
        elif err is None:
            tm.coordinator = node
        else:
            self.handle_error(err, now)

    def __repr__(self) -> str:
        kind = "transaction" if self.key_type == KEY_TYPE_TRANSACTION else "group"
        return f"FindCoordinatorHandler({kind} {self.key!r})"


class AddPartitionsToTxnHandler(TxnRequestHandler):
    """Partitions join the transaction before their first batch is sent."""

    request_class = AddPartitionsToTxnRequest

    def __init__(self, tm: TransactionManager, partitions: List[TopicPartition]) -> None:
        super().__init__(tm)
        self.partitions = partitions

    def reenqueue(self) -> None:
        self.tm.add_partitions_failed(retry=True)

    def build_request(self, version: int) -> AddPartitionsToTxnRequest:
        tm = self.tm
        pid, epoch = tm.producer_id_and_epoch
        topics: dict = {}
        for tp in self.partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        return AddPartitionsToTxnRequest(self.transactional_id, pid, epoch, topics)

    def handle_response(self, body: Any, now: int) -> None:
        tm = self.tm
        added = []
        worst: Optional[errors.KafkaError] = None
        for tp in self.partitions:
            # a partition the answer leaves out was not attempted
            code = body.errors.get((tp.topic, tp.partition), _NOT_ATTEMPTED)
            err = errors.exception_for(code)
            if err is None:
                added.append(tp)
            elif worst is None or not isinstance(err, errors.OperationNotAttemptedError):
                worst = err
        tm.partitions_added(added)
        if worst is None:
            return
        if isinstance(worst, COORDINATOR_MOVED):
            tm.coordinator_unknown()
            tm.add_partitions_failed(retry=True)
            self.retry(now)
        elif (
            worst.retriable
            or isinstance(worst, errors.OperationNotAttemptedError)
            or isinstance(worst, errors.UnknownTopicOrPartitionError)  # metadata may be behind
        ):
            tm.add_partitions_failed(retry=True)
            self.retry(now, min(tm.retry_backoff_ms, ADD_PARTITIONS_RETRY_BACKOFF_MS))
        elif isinstance(worst, FATAL_TXN_ERRORS):
            tm.add_partitions_failed(retry=False)
            tm.transition_to_fatal_error(fenced(worst))
        else:
            tm.add_partitions_failed(retry=False)
            tm.transition_to_abortable_error(worst)

    def __repr__(self) -> str:
        return f"AddPartitionsToTxnHandler({self.partitions})"


class AddOffsetsToTxnHandler(TxnRequestHandler):
    """The consumer group joins the transaction (``send_offsets_to_transaction``, first step)."""

    request_class = AddOffsetsToTxnRequest

    def __init__(self, tm: TransactionManager, group_id: str) -> None:
        super().__init__(tm)
        self.group_id = group_id

    def build_request(self, version: int) -> AddOffsetsToTxnRequest:
        tm = self.tm
        pid, epoch = tm.producer_id_and_epoch
        return AddOffsetsToTxnRequest(self.transactional_id, pid, epoch, self.group_id)

    def handle_response(self, body: Any, now: int) -> None:
        err = errors.exception_for(body.error_code)
        if err is None:
            self.tm.offsets_stage_done(None)
        elif not err.retriable and not isinstance(err, FATAL_TXN_ERRORS):
            self.tm.offsets_stage_done(err)  # e.g. GROUP_AUTHORIZATION_FAILED: abortable
        else:
            self.handle_error(err, now)


class TxnOffsetCommitHandler(TxnRequestHandler):
    """The offsets themselves, to the group's coordinator (``send_offsets_to_transaction``,
    second step)."""

    request_class = TxnOffsetCommitRequest
    # v5 would tell the group coordinator to add the offsets to the transaction itself
    # (transactions version 2); on version 1 AddOffsetsToTxn did that
    last_version_before_transaction_v2 = LAST_TXN_OFFSET_COMMIT_BEFORE_TRANSACTION_V2

    def __init__(self, tm: TransactionManager, pending: PendingOffsets) -> None:
        super().__init__(tm)
        self.pending = pending

    def destination(self) -> Optional[Node]:
        return self.pending.group_coordinator

    def coordinator_lost(self) -> None:
        self.pending.group_coordinator = None

    def build_request(self, version: int) -> TxnOffsetCommitRequest:
        tm = self.tm
        pid, epoch = tm.producer_id_and_epoch
        by_topic: dict = {}
        for tp, (offset, leader_epoch, meta) in self.pending.offsets.items():
            by_topic.setdefault(tp.topic, []).append((tp.partition, offset, leader_epoch, meta))
        g = self.pending.group
        return TxnOffsetCommitRequest(
            self.transactional_id,
            g.group_id,
            pid,
            epoch,
            g.generation_id,
            g.member_id,
            g.group_instance_id,
            by_topic,
        )

    def handle_response(self, body: Any, now: int) -> None:
        tm = self.tm
        if tm.pending_offsets is not self.pending:
            return  # ended meanwhile (an abort)
        worst = None
        for code in body.errors.values():
            worst = errors.exception_for(code)
            if worst is not None:
                break
        if worst is None:
            tm.offsets_stage_done(None)
        elif isinstance(worst, (*COORDINATOR_MOVED, errors.RequestTimedOutError)):
            self.pending.group_coordinator = None
            self.retry(now)
        elif worst.retriable:  # load in progress, unknown topic/partition, ...
            self.retry(now)
        elif isinstance(worst, FATAL_TXN_ERRORS):
            tm.transition_to_fatal_error(fenced(worst))
        elif isinstance(worst, (errors.UnknownMemberIdError, errors.IllegalGenerationError)):
            # the consumer rebalanced since its group metadata was taken (Java, kafka-python)
            failed = errors.CommitFailedError(
                f"the transaction's offsets were refused: the consumer group's metadata is "
                f"stale ({worst})"
            )
            failed.__cause__ = worst
            tm.offsets_stage_done(failed)
        else:  # e.g. GROUP_AUTHORIZATION_FAILED, FENCED_INSTANCE_ID
            tm.offsets_stage_done(worst)


class EndTxnHandler(TxnRequestHandler):
    """Commit or abort the transaction."""

    request_class = EndTxnRequest
    # v5 has the coordinator bump the epoch as the transaction ends (transactions version 2);
    # a version 1 transaction ends with v4 at most (Java's EndTxnRequest.Builder)
    last_version_before_transaction_v2 = END_TXN_LAST_VERSION_BEFORE_TRANSACTION_V2

    def __init__(self, tm: TransactionManager, committed: bool) -> None:
        super().__init__(tm)
        self.committed = committed

    def build_request(self, version: int) -> EndTxnRequest:
        tm = self.tm
        pid, epoch = tm.producer_id_and_epoch
        return EndTxnRequest(self.transactional_id, pid, epoch, self.committed)

    def handle_response(self, body: Any, now: int) -> None:
        err = errors.exception_for(body.error_code)
        if err is None:
            # v5+ (transactions version 2): the id and epoch the coordinator bumped to; -1
            # before (and from a coordinator answering v5 while still on version 1)
            self.tm.end_txn_succeeded(body.producer_id, body.producer_epoch)
        elif not self.committed and isinstance(err, errors.TransactionAbortableError):
            # the abortable state's one way out is this abort: answered "abort", it cannot go
            # on (sent again it would be answered the same, at once), so the producer ends
            log.error("EndTxn(abort) failed: %s", err)
            self.tm.transition_to_fatal_error(err)
        else:
            self.handle_error(err, now)

    def __repr__(self) -> str:
        return f"EndTxnHandler({'commit' if self.committed else 'abort'})"
