"""aiokafka's error classes, by the same names and in the same tree, for ``cproducer.aio``.

Code written against aiokafka catches ``aiokafka.errors.KafkaTimeoutError``,
``ProducerClosed``, ``IllegalOperation``, ``MessageSizeTooLargeError``...; with the import switched
to ``cproducer.aio.errors`` the same ``except`` clauses hold: the names, bases, ``errno``,
``message``, ``retriable`` and ``invalid_metadata`` are aiokafka's (``KafkaError`` is a
``RuntimeError``; ``IllegalOperation`` is not a ``KafkaError``; ``for_code`` maps a protocol
error code to its class, ``UnknownError`` for codes it does not know).

:func:`translate` turns an error of the cproducer engine (``cproducer.errors``) into the class
aiokafka raises in the same situation, keeping the engine's error as ``__cause__``.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

from cproducer import errors as engine_errors

__all__ = [  # noqa: RUF022 - grouped as aiokafka groups them
    "ConsumerStoppedError",
    "NoOffsetForPartitionError",
    "RecordTooLargeError",
    "ProducerClosed",
    "ProducerFenced",
    "IllegalOperation",
    "KafkaError",
    "IllegalStateError",
    "IllegalArgumentError",
    "NoBrokersAvailable",
    "NodeNotReadyError",
    "KafkaProtocolError",
    "CorrelationIdError",
    "Cancelled",
    "TooManyInFlightRequests",
    "StaleMetadata",
    "MetadataEmptyBrokerList",
    "UnrecognizedBrokerVersion",
    "IncompatibleBrokerVersion",
    "CommitFailedError",
    "AuthenticationMethodNotSupported",
    "AuthenticationFailedError",
    "KafkaUnavailableError",
    "KafkaTimeoutError",
    "KafkaConnectionError",
    "UnsupportedCodecError",
    "KafkaConfigurationError",
    "QuotaViolationError",
    "BrokerResponseError",
    "NoError",
    "UnknownError",
    "OffsetOutOfRangeError",
    "CorruptRecordException",
    "UnknownTopicOrPartitionError",
    "InvalidFetchRequestError",
    "LeaderNotAvailableError",
    "NotLeaderForPartitionError",
    "RequestTimedOutError",
    "BrokerNotAvailableError",
    "ReplicaNotAvailableError",
    "MessageSizeTooLargeError",
    "StaleControllerEpochError",
    "OffsetMetadataTooLargeError",
    "StaleLeaderEpochCodeError",
    "GroupLoadInProgressError",
    "GroupCoordinatorNotAvailableError",
    "NotCoordinatorForGroupError",
    "InvalidTopicError",
    "RecordListTooLargeError",
    "NotEnoughReplicasError",
    "NotEnoughReplicasAfterAppendError",
    "InvalidRequiredAcksError",
    "IllegalGenerationError",
    "InconsistentGroupProtocolError",
    "InvalidGroupIdError",
    "UnknownMemberIdError",
    "InvalidSessionTimeoutError",
    "RebalanceInProgressError",
    "InvalidCommitOffsetSizeError",
    "TopicAuthorizationFailedError",
    "GroupAuthorizationFailedError",
    "ClusterAuthorizationFailedError",
    "InvalidTimestampError",
    "UnsupportedSaslMechanismError",
    "IllegalSaslStateError",
    "UnsupportedVersionError",
    "TopicAlreadyExistsError",
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "InvalidReplicationAssignmentError",
    "InvalidConfigurationError",
    "NotControllerError",
    "InvalidRequestError",
    "UnsupportedForMessageFormatError",
    "PolicyViolationError",
    "OutOfOrderSequenceNumber",
    "DuplicateSequenceNumber",
    "InvalidProducerEpoch",
    "InvalidTxnState",
    "InvalidProducerIdMapping",
    "InvalidTransactionTimeout",
    "ConcurrentTransactions",
    "TransactionCoordinatorFenced",
    "TransactionalIdAuthorizationFailed",
    "SecurityDisabled",
    "OperationNotAttempted",
    "KafkaStorageError",
    "LogDirNotFound",
    "SaslAuthenticationFailed",
    "UnknownProducerId",
    "ReassignmentInProgress",
    "DelegationTokenAuthDisabled",
    "DelegationTokenNotFound",
    "DelegationTokenOwnerMismatch",
    "DelegationTokenRequestNotAllowed",
    "DelegationTokenAuthorizationFailed",
    "DelegationTokenExpired",
    "InvalidPrincipalType",
    "NonEmptyGroup",
    "GroupIdNotFound",
    "FetchSessionIdNotFound",
    "InvalidFetchSessionEpoch",
    "ListenerNotFound",
    "MemberIdRequired",
    "InvalidMessageError",
    "CoordinatorLoadInProgressError",
    "CoordinatorNotAvailableError",
    "NotCoordinatorError",
    "for_code",
    "kafka_errors",
]


class KafkaError(RuntimeError):
    retriable = False
    #: whether the metadata should be refreshed after this error
    invalid_metadata = False

    def __str__(self) -> str:
        if not self.args:
            return self.__class__.__name__
        return f"{self.__class__.__name__}: {super().__str__()}"


class IllegalStateError(KafkaError):
    pass


class IllegalArgumentError(KafkaError):
    pass


class NoBrokersAvailable(KafkaError):
    retriable = True
    invalid_metadata = True


class NodeNotReadyError(KafkaError):
    retriable = True


class KafkaProtocolError(KafkaError):
    retriable = True


class CorrelationIdError(KafkaProtocolError):
    retriable = True


class Cancelled(KafkaError):
    retriable = True


class TooManyInFlightRequests(KafkaError):
    retriable = True


class StaleMetadata(KafkaError):
    retriable = True
    invalid_metadata = True


class MetadataEmptyBrokerList(KafkaError):
    retriable = True


class UnrecognizedBrokerVersion(KafkaError):
    pass


class IncompatibleBrokerVersion(KafkaError):
    pass


class CommitFailedError(KafkaError):
    pass


class AuthenticationMethodNotSupported(KafkaError):
    pass


class AuthenticationFailedError(KafkaError):
    retriable = False


class KafkaUnavailableError(KafkaError):
    pass


class KafkaTimeoutError(KafkaError):
    pass


class KafkaConnectionError(KafkaError):
    retriable = True
    invalid_metadata = True


class UnsupportedCodecError(KafkaError):
    pass


class KafkaConfigurationError(KafkaError):
    pass


class QuotaViolationError(KafkaError):
    pass


class ConsumerStoppedError(Exception):
    """A consumer's ``get*`` call after it stopped (aiokafka's name, kept for imports)."""


class IllegalOperation(Exception):
    """An operation the configuration does not allow, e.g. a transaction call without
    ``transactional_id``, or ``send`` outside a transaction of a transactional producer."""


class NoOffsetForPartitionError(KafkaError):
    pass


class RecordTooLargeError(KafkaError):
    pass


class ProducerClosed(KafkaError):
    pass


class ProducerFenced(KafkaError):
    """A newer producer with the same ``transactional_id`` started (or the broker expired this
    producer's transaction): this producer cannot go on."""

    def __init__(
        self,
        msg: str = (
            "a newer producer uses the same transactional_id, or the transaction timed out "
            "(keep the processing time below transaction_timeout_ms)"
        ),
    ) -> None:
        super().__init__(msg)


class BrokerResponseError(KafkaError):
    errno: int
    message: str
    description: str = ""

    def __str__(self) -> str:
        return f"[Error {self.errno}] {super().__str__()}"


_ERRORS_BY_CODE: Dict[int, Type[BrokerResponseError]] = {}


def _code(
    errno: int, name: str, message: str, retriable: bool = False, invalid_metadata: bool = False
) -> Type[BrokerResponseError]:
    attrs: Dict[str, Any] = {"errno": errno, "message": message, "__module__": __name__}
    if retriable:
        attrs["retriable"] = True
    if invalid_metadata:
        attrs["invalid_metadata"] = True
    cls = type(name, (BrokerResponseError,), attrs)
    _ERRORS_BY_CODE[errno] = cls
    return cls


# aiokafka's table: errno, protocol error name, retriable, invalid_metadata
NoError = _code(0, "NoError", "NO_ERROR")
UnknownError = _code(-1, "UnknownError", "UNKNOWN")
OffsetOutOfRangeError = _code(1, "OffsetOutOfRangeError", "OFFSET_OUT_OF_RANGE")
CorruptRecordException = _code(2, "CorruptRecordException", "CORRUPT_MESSAGE")
InvalidMessageError = CorruptRecordException
UnknownTopicOrPartitionError = _code(
    3,
    "UnknownTopicOrPartitionError",
    "UNKNOWN_TOPIC_OR_PARTITION",
    retriable=True,
    invalid_metadata=True,
)
InvalidFetchRequestError = _code(4, "InvalidFetchRequestError", "INVALID_FETCH_SIZE")
LeaderNotAvailableError = _code(
    5, "LeaderNotAvailableError", "LEADER_NOT_AVAILABLE", retriable=True, invalid_metadata=True
)
NotLeaderForPartitionError = _code(
    6,
    "NotLeaderForPartitionError",
    "NOT_LEADER_FOR_PARTITION",
    retriable=True,
    invalid_metadata=True,
)
RequestTimedOutError = _code(7, "RequestTimedOutError", "REQUEST_TIMED_OUT", retriable=True)
BrokerNotAvailableError = _code(8, "BrokerNotAvailableError", "BROKER_NOT_AVAILABLE")
ReplicaNotAvailableError = _code(9, "ReplicaNotAvailableError", "REPLICA_NOT_AVAILABLE")
MessageSizeTooLargeError = _code(10, "MessageSizeTooLargeError", "MESSAGE_SIZE_TOO_LARGE")
StaleControllerEpochError = _code(11, "StaleControllerEpochError", "STALE_CONTROLLER_EPOCH")
OffsetMetadataTooLargeError = _code(12, "OffsetMetadataTooLargeError", "OFFSET_METADATA_TOO_LARGE")
StaleLeaderEpochCodeError = _code(13, "StaleLeaderEpochCodeError", "STALE_LEADER_EPOCH_CODE")
GroupLoadInProgressError = _code(
    14, "GroupLoadInProgressError", "COORDINATOR_LOAD_IN_PROGRESS", retriable=True
)
CoordinatorLoadInProgressError = GroupLoadInProgressError
GroupCoordinatorNotAvailableError = _code(
    15, "GroupCoordinatorNotAvailableError", "COORDINATOR_NOT_AVAILABLE", retriable=True
)
CoordinatorNotAvailableError = GroupCoordinatorNotAvailableError
NotCoordinatorForGroupError = _code(
    16, "NotCoordinatorForGroupError", "NOT_COORDINATOR", retriable=True
)
NotCoordinatorError = NotCoordinatorForGroupError
InvalidTopicError = _code(17, "InvalidTopicError", "INVALID_TOPIC")
RecordListTooLargeError = _code(18, "RecordListTooLargeError", "RECORD_LIST_TOO_LARGE")
NotEnoughReplicasError = _code(19, "NotEnoughReplicasError", "NOT_ENOUGH_REPLICAS", retriable=True)
NotEnoughReplicasAfterAppendError = _code(
    20, "NotEnoughReplicasAfterAppendError", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", retriable=True
)
InvalidRequiredAcksError = _code(21, "InvalidRequiredAcksError", "INVALID_REQUIRED_ACKS")
IllegalGenerationError = _code(22, "IllegalGenerationError", "ILLEGAL_GENERATION")
InconsistentGroupProtocolError = _code(
    23, "InconsistentGroupProtocolError", "INCONSISTENT_GROUP_PROTOCOL"
)
InvalidGroupIdError = _code(24, "InvalidGroupIdError", "INVALID_GROUP_ID")
UnknownMemberIdError = _code(25, "UnknownMemberIdError", "UNKNOWN_MEMBER_ID")
InvalidSessionTimeoutError = _code(26, "InvalidSessionTimeoutError", "INVALID_SESSION_TIMEOUT")
RebalanceInProgressError = _code(27, "RebalanceInProgressError", "REBALANCE_IN_PROGRESS")
InvalidCommitOffsetSizeError = _code(
    28, "InvalidCommitOffsetSizeError", "INVALID_COMMIT_OFFSET_SIZE"
)
TopicAuthorizationFailedError = _code(
    29, "TopicAuthorizationFailedError", "TOPIC_AUTHORIZATION_FAILED"
)
GroupAuthorizationFailedError = _code(
    30, "GroupAuthorizationFailedError", "GROUP_AUTHORIZATION_FAILED"
)
ClusterAuthorizationFailedError = _code(
    31, "ClusterAuthorizationFailedError", "CLUSTER_AUTHORIZATION_FAILED"
)
InvalidTimestampError = _code(32, "InvalidTimestampError", "INVALID_TIMESTAMP")
UnsupportedSaslMechanismError = _code(
    33, "UnsupportedSaslMechanismError", "UNSUPPORTED_SASL_MECHANISM"
)
IllegalSaslStateError = _code(34, "IllegalSaslStateError", "ILLEGAL_SASL_STATE")
UnsupportedVersionError = _code(35, "UnsupportedVersionError", "UNSUPPORTED_VERSION")
TopicAlreadyExistsError = _code(36, "TopicAlreadyExistsError", "TOPIC_ALREADY_EXISTS")
InvalidPartitionsError = _code(37, "InvalidPartitionsError", "INVALID_PARTITIONS")
InvalidReplicationFactorError = _code(
    38, "InvalidReplicationFactorError", "INVALID_REPLICATION_FACTOR"
)
InvalidReplicationAssignmentError = _code(
    39, "InvalidReplicationAssignmentError", "INVALID_REPLICATION_ASSIGNMENT"
)
InvalidConfigurationError = _code(40, "InvalidConfigurationError", "INVALID_CONFIG")
NotControllerError = _code(41, "NotControllerError", "NOT_CONTROLLER", retriable=True)
InvalidRequestError = _code(42, "InvalidRequestError", "INVALID_REQUEST")
UnsupportedForMessageFormatError = _code(
    43, "UnsupportedForMessageFormatError", "UNSUPPORTED_FOR_MESSAGE_FORMAT"
)
PolicyViolationError = _code(44, "PolicyViolationError", "POLICY_VIOLATION")
OutOfOrderSequenceNumber = _code(45, "OutOfOrderSequenceNumber", "OUT_OF_ORDER_SEQUENCE_NUMBER")
DuplicateSequenceNumber = _code(46, "DuplicateSequenceNumber", "DUPLICATE_SEQUENCE_NUMBER")
InvalidProducerEpoch = _code(47, "InvalidProducerEpoch", "INVALID_PRODUCER_EPOCH")
InvalidTxnState = _code(48, "InvalidTxnState", "INVALID_TXN_STATE")
InvalidProducerIdMapping = _code(49, "InvalidProducerIdMapping", "INVALID_PRODUCER_ID_MAPPING")
InvalidTransactionTimeout = _code(50, "InvalidTransactionTimeout", "INVALID_TRANSACTION_TIMEOUT")
ConcurrentTransactions = _code(51, "ConcurrentTransactions", "CONCURRENT_TRANSACTIONS")
TransactionCoordinatorFenced = _code(
    52, "TransactionCoordinatorFenced", "TRANSACTION_COORDINATOR_FENCED"
)
TransactionalIdAuthorizationFailed = _code(
    53, "TransactionalIdAuthorizationFailed", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
)
SecurityDisabled = _code(54, "SecurityDisabled", "SECURITY_DISABLED")
OperationNotAttempted = _code(55, "OperationNotAttempted", "OPERATION_NOT_ATTEMPTED")
KafkaStorageError = _code(
    56, "KafkaStorageError", "KAFKA_STORAGE_ERROR", retriable=True, invalid_metadata=True
)
LogDirNotFound = _code(57, "LogDirNotFound", "LOG_DIR_NOT_FOUND")
SaslAuthenticationFailed = _code(58, "SaslAuthenticationFailed", "SASL_AUTHENTICATION_FAILED")
UnknownProducerId = _code(59, "UnknownProducerId", "UNKNOWN_PRODUCER_ID")
ReassignmentInProgress = _code(60, "ReassignmentInProgress", "REASSIGNMENT_IN_PROGRESS")
DelegationTokenAuthDisabled = _code(
    61, "DelegationTokenAuthDisabled", "DELEGATION_TOKEN_AUTH_DISABLED"
)
DelegationTokenNotFound = _code(62, "DelegationTokenNotFound", "DELEGATION_TOKEN_NOT_FOUND")
DelegationTokenOwnerMismatch = _code(
    63, "DelegationTokenOwnerMismatch", "DELEGATION_TOKEN_OWNER_MISMATCH"
)
DelegationTokenRequestNotAllowed = _code(
    64, "DelegationTokenRequestNotAllowed", "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"
)
DelegationTokenAuthorizationFailed = _code(
    65, "DelegationTokenAuthorizationFailed", "DELEGATION_TOKEN_AUTHORIZATION_FAILED"
)
DelegationTokenExpired = _code(66, "DelegationTokenExpired", "DELEGATION_TOKEN_EXPIRED")
InvalidPrincipalType = _code(67, "InvalidPrincipalType", "INVALID_PRINCIPAL_TYPE")
NonEmptyGroup = _code(68, "NonEmptyGroup", "NON_EMPTY_GROUP")
GroupIdNotFound = _code(69, "GroupIdNotFound", "GROUP_ID_NOT_FOUND")
FetchSessionIdNotFound = _code(70, "FetchSessionIdNotFound", "FETCH_SESSION_ID_NOT_FOUND")
InvalidFetchSessionEpoch = _code(71, "InvalidFetchSessionEpoch", "INVALID_FETCH_SESSION_EPOCH")
ListenerNotFound = _code(72, "ListenerNotFound", "LISTENER_NOT_FOUND")
MemberIdRequired = _code(79, "MemberIdRequired", "MEMBER_ID_REQUIRED")

#: protocol error code -> class (the codes aiokafka knows)
kafka_errors: Dict[int, Type[BrokerResponseError]] = dict(_ERRORS_BY_CODE)


def for_code(error_code: int) -> Type[BrokerResponseError]:
    """The class of a protocol error code (``UnknownError`` for a code aiokafka does not know)."""
    return kafka_errors.get(error_code, UnknownError)


# ---------------------------------------------------------------- from the engine's errors

# client-side errors of the engine -> aiokafka's class for the same situation (first match)
_CLIENT_ERRORS = (
    (engine_errors.ProducerClosedError, ProducerClosed),
    (engine_errors.KafkaTimeoutError, KafkaTimeoutError),  # also BufferExhaustedError
    (engine_errors.RecordTooLargeError, MessageSizeTooLargeError),
    (engine_errors.CorruptResponseError, KafkaProtocolError),
    (engine_errors.NetworkError, KafkaConnectionError),
    (engine_errors.IllegalStateError, IllegalStateError),
    (engine_errors.InvalidTopicError, InvalidTopicError),
    (engine_errors.ConfigError, KafkaConfigurationError),
)
# aiokafka reports a fenced producer as ProducerFenced, whichever code said so
_FENCED_CODES = frozenset((engine_errors.ProducerFencedError.errno, InvalidProducerEpoch.errno))


def is_fenced(exc: Optional[BaseException]) -> bool:
    """An engine error aiokafka reports as ProducerFenced."""
    return getattr(exc, "errno", None) in _FENCED_CODES


def translate(exc: BaseException) -> BaseException:
    """aiokafka's exception for an error of the engine, a new one each call (its
    ``__cause__`` is the engine's error). Other exceptions (a user's serializer raising
    ValueError, ...) come back unchanged."""
    if not isinstance(exc, engine_errors.KafkaError):
        return exc
    text = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
    out: BaseException
    if is_fenced(exc):
        out = ProducerFenced()
    elif isinstance(exc, engine_errors.SerializationError):
        out = TypeError(text)  # aiokafka's record builder raises TypeError for a non-bytes value
    elif isinstance(exc, engine_errors.BrokerResponseError):
        cls: Type[BaseException] = for_code(exc.errno)  # UnknownError for codes aiokafka lacks
        out = cls(text) if text else cls()
    else:
        cls = KafkaError
        for engine_cls, aio_cls in _CLIENT_ERRORS:
            if isinstance(exc, engine_cls):
                cls = aio_cls
                break
        out = cls(text or str(exc))
    out.__cause__ = exc
    return out
