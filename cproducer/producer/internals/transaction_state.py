"""The transactional producer's states and what its callers wait on (Java's
``TransactionManager.State``, ``TransactionalRequestResult``, ``ConsumerGroupMetadata``).

``VALID_SOURCES`` is Java's ``isTransitionValid``: for each state, the states it may be entered
from::

    UNINITIALIZED -init_transactions-> INITIALIZING -InitProducerId-> READY
    READY -begin_transaction-> IN_TRANSACTION -commit-> COMMITTING_TRANSACTION -EndTxn-> READY
                                              -abort->  ABORTING_TRANSACTION   -EndTxn-> READY
    IN_TRANSACTION / COMMITTING_TRANSACTION -a batch fails-> ABORTABLE_ERROR -abort-> ABORTING
    any -fenced, unauthorized, unexpected-> FATAL_ERROR
"""

from __future__ import annotations

import enum
import threading
from typing import Dict, NamedTuple, Optional, Tuple

from cproducer import errors
from cproducer.cluster import Node, TopicPartition

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
VALID_SOURCES = {
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
