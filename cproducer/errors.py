"""The error tree of cproducer.

Client-side errors (``ConfigError``, ``SerializationError``, ...) and one class per broker error
code that Produce, Metadata and InitProducerId can return (codes from Kafka's ``Errors``
table). ``.retriable`` says whether the Sender may retry a batch that failed with it, as in Java's
``RetriableException`` subclasses.
"""

from __future__ import annotations

from typing import Dict, Optional, Type


class KafkaError(Exception):
    """Base of every error this package raises or completes a future with."""

    retriable: bool = False
    #: Kafka protocol error code, or -1 for client-side errors that have no code.
    errno: int = -1
    #: When true, the Sender refreshes metadata before retrying (Java's InvalidMetadataException).
    invalid_metadata: bool = False

    def __str__(self) -> str:
        if not self.args:
            return self.__class__.__name__
        return super().__str__()


# ---------------------------------------------------------------- client-side errors


class ConfigError(KafkaError, ValueError):
    """A configuration key is unknown or its value is not allowed."""


class KafkaTimeoutError(KafkaError):
    """An operation did not finish within its bound (``max.block.ms``, delivery timeout...)."""

    retriable = True


class RecordTooLargeError(KafkaError, ValueError):
    """A record is larger than ``max.request.size`` or ``buffer.memory`` (or the broker's limit)."""

    errno = 10


class BufferExhaustedError(KafkaTimeoutError):
    """No memory could be allocated from the BufferPool within ``max.block.ms``."""


class SerializationError(KafkaError, TypeError):
    """A key, value or header could not be turned into bytes."""


class ProducerClosedError(KafkaError):
    """The producer was closed: no new records are accepted; pending ones were aborted."""


class InvalidPartitionError(KafkaError, ValueError):
    """An explicit partition is negative or not below the topic's partition count."""


class InvalidTopicError(KafkaError, ValueError):
    """A topic name is empty, too long or has characters Kafka does not allow."""

    errno = 17


class IllegalStateError(KafkaError):
    """An operation was called when the object was not in a state that allows it."""


class TransactionAbortedError(KafkaError):
    """The record was not sent: its transaction was aborted before it could be (Java's
    TransactionAbortedException)."""


class NetworkError(KafkaError):
    """A connection failed or was closed while a request was in flight."""

    retriable = True
    invalid_metadata = True


class CorruptResponseError(NetworkError):
    """A peer sent bytes that are not a valid response (bad length, wrong correlation id...)."""


class BrokerResponseError(KafkaError):
    """Base of every error that a broker reports with an error code."""

    message: str = ""
    description: str = ""

    def __str__(self) -> str:
        base = f"[Error {self.errno}] {self.__class__.__name__}"
        if self.args and self.args[0]:
            return f"{base}: {super().__str__()}"
        return base


# ---------------------------------------------------------------- broker error codes


def _broker_error(
    name: str, errno: int, retriable: bool = False, invalid_metadata: bool = False, doc: str = ""
) -> Type[BrokerResponseError]:
    cls = type(
        name,
        (BrokerResponseError,),
        {
            "errno": errno,
            "retriable": retriable,
            "invalid_metadata": invalid_metadata,
            "__doc__": doc or name,
            "__module__": __name__,
        },
    )
    return cls


UnknownServerError = _broker_error("UnknownServerError", -1, doc="Unexpected server error.")
OffsetOutOfRangeError = _broker_error("OffsetOutOfRangeError", 1)
CorruptRecordError = _broker_error(
    "CorruptRecordError", 2, retriable=True, doc="The message failed its CRC check or is corrupt."
)
UnknownTopicOrPartitionError = _broker_error(
    "UnknownTopicOrPartitionError", 3, retriable=True, invalid_metadata=True
)
InvalidFetchSizeError = _broker_error("InvalidFetchSizeError", 4)
LeaderNotAvailableError = _broker_error(
    "LeaderNotAvailableError", 5, retriable=True, invalid_metadata=True
)
NotLeaderForPartitionError = _broker_error(
    "NotLeaderForPartitionError", 6, retriable=True, invalid_metadata=True
)
RequestTimedOutError = _broker_error("RequestTimedOutError", 7, retriable=True)
BrokerNotAvailableError = _broker_error("BrokerNotAvailableError", 8)
ReplicaNotAvailableError = _broker_error(
    "ReplicaNotAvailableError", 9, retriable=True, invalid_metadata=True
)
MessageSizeTooLargeError = _broker_error(
    "MessageSizeTooLargeError",
    10,
    doc="A message is larger than the server accepts.",
)
NetworkExceptionError = _broker_error(
    "NetworkExceptionError", 13, retriable=True, invalid_metadata=True
)
CoordinatorLoadInProgressError = _broker_error("CoordinatorLoadInProgressError", 14, retriable=True)
CoordinatorNotAvailableError = _broker_error("CoordinatorNotAvailableError", 15, retriable=True)
NotCoordinatorError = _broker_error("NotCoordinatorError", 16, retriable=True)
InvalidTopicExceptionError = _broker_error("InvalidTopicExceptionError", 17)
RecordListTooLargeError = _broker_error("RecordListTooLargeError", 18)
NotEnoughReplicasError = _broker_error("NotEnoughReplicasError", 19, retriable=True)
NotEnoughReplicasAfterAppendError = _broker_error(
    "NotEnoughReplicasAfterAppendError", 20, retriable=True
)
InvalidRequiredAcksError = _broker_error("InvalidRequiredAcksError", 21)
InvalidTimestampError = _broker_error("InvalidTimestampError", 32)
UnsupportedVersionError = _broker_error("UnsupportedVersionError", 35)
TopicAlreadyExistsError = _broker_error("TopicAlreadyExistsError", 36)
InvalidPartitionsError = _broker_error("InvalidPartitionsError", 37)
InvalidReplicationFactorError = _broker_error("InvalidReplicationFactorError", 38)
NotControllerError = _broker_error("NotControllerError", 41, retriable=True)
InvalidRequestError = _broker_error("InvalidRequestError", 42)
UnsupportedForMessageFormatError = _broker_error("UnsupportedForMessageFormatError", 43)
PolicyViolationError = _broker_error("PolicyViolationError", 44)
OutOfOrderSequenceNumberError = _broker_error("OutOfOrderSequenceNumberError", 45)
DuplicateSequenceNumberError = _broker_error("DuplicateSequenceNumberError", 46)
InvalidProducerEpochError = _broker_error("InvalidProducerEpochError", 47)
InvalidTxnStateError = _broker_error("InvalidTxnStateError", 48)
InvalidProducerIdMappingError = _broker_error("InvalidProducerIdMappingError", 49)
InvalidTransactionTimeoutError = _broker_error("InvalidTransactionTimeoutError", 50)
ConcurrentTransactionsError = _broker_error("ConcurrentTransactionsError", 51, retriable=True)
TransactionalIdAuthorizationFailedError = _broker_error(
    "TransactionalIdAuthorizationFailedError", 53
)
ClusterAuthorizationFailedError = _broker_error("ClusterAuthorizationFailedError", 31)
TopicAuthorizationFailedError = _broker_error("TopicAuthorizationFailedError", 29)
GroupAuthorizationFailedError = _broker_error("GroupAuthorizationFailedError", 30)
SecurityDisabledError = _broker_error("SecurityDisabledError", 54)
UnknownProducerIdError = _broker_error("UnknownProducerIdError", 59)
KafkaStorageError = _broker_error("KafkaStorageError", 56, retriable=True, invalid_metadata=True)
SaslAuthenticationFailedError = _broker_error("SaslAuthenticationFailedError", 58)
OperationNotAttemptedError = _broker_error("OperationNotAttemptedError", 55)
FencedLeaderEpochError = _broker_error(
    "FencedLeaderEpochError", 74, retriable=True, invalid_metadata=True
)
UnknownLeaderEpochError = _broker_error("UnknownLeaderEpochError", 75, retriable=True)
ListenerNotFoundError = _broker_error(
    "ListenerNotFoundError", 72, retriable=True, invalid_metadata=True
)
PreferredLeaderNotAvailableError = _broker_error(
    "PreferredLeaderNotAvailableError", 80, retriable=True, invalid_metadata=True
)
OffsetNotAvailableError = _broker_error("OffsetNotAvailableError", 78, retriable=True)
ThrottlingQuotaExceededError = _broker_error("ThrottlingQuotaExceededError", 89, retriable=True)
ProducerFencedError = _broker_error("ProducerFencedError", 90)
InvalidRecordError = _broker_error("InvalidRecordError", 87)
UnstableOffsetCommitError = _broker_error("UnstableOffsetCommitError", 88, retriable=True)
TransactionCoordinatorFencedError = _broker_error("TransactionCoordinatorFencedError", 52)
InvalidUpdateVersionError = _broker_error("InvalidUpdateVersionError", 95)
UnknownTopicIdError = _broker_error(
    "UnknownTopicIdError", 100, retriable=True, invalid_metadata=True
)
InconsistentTopicIdError = _broker_error(
    "InconsistentTopicIdError", 103, retriable=True, invalid_metadata=True
)
NotLeaderOrFollowerError = NotLeaderForPartitionError
TransactionAbortableError = _broker_error("TransactionAbortableError", 120)

_ERRORS_BY_CODE: Dict[int, Type[BrokerResponseError]] = {}
for _obj in list(globals().values()):
    if (
        isinstance(_obj, type)
        and issubclass(_obj, BrokerResponseError)
        and _obj is not BrokerResponseError
    ):
        _ERRORS_BY_CODE.setdefault(_obj.errno, _obj)


def for_code(errno: int, message: Optional[str] = None) -> Optional[BrokerResponseError]:
    """The error instance for a protocol error code, or None for code 0 (no error).

    Unknown codes map to a ``BrokerResponseError`` subclass made on the fly that keeps the code.
    """
    if errno == 0:
        return None
    cls = _ERRORS_BY_CODE.get(errno)
    if cls is None:
        cls = _broker_error(f"BrokerError{errno}", errno)
        _ERRORS_BY_CODE[errno] = cls
    return cls(message or "")


def error_class(errno: int) -> Type[BrokerResponseError]:
    """The class registered for a protocol error code (UnknownServerError for unknown codes)."""
    return _ERRORS_BY_CODE.get(errno, UnknownServerError)
