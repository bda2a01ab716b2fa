"""The error tree of cproducer: kafka-python's names and hierarchy, Java's retry semantics.

``KafkaError`` is the base of everything this package raises or completes a future with.
``RetriableError`` marks what the Sender may retry (Java's ``RetriableException``; ``.retriable``),
``InvalidMetadataError`` what it retries after refreshing metadata (Java's
``InvalidMetadataException``; ``.invalid_metadata``).

Every broker error code has one ``BrokerResponseError`` subclass with ``errno`` (the code),
``message`` (its name) and ``description``, named as kafka-python names it; the Java client's name
for the same code is an alias of that class (``RecordTooLargeError is MessageSizeTooLargeError``,
``NotLeaderOrFollowerError is NotLeaderForPartitionError``), so ``except`` works with either.
Where kafka-python and Java class a code differently, Java's retry semantics win for one code only:
CORRUPT_MESSAGE is retriable here, as in Java (kafka-python's ``CorruptRecordError`` is not).

``for_code(code)`` is the class of a code (kafka-python's function); ``exception_for(code,
message)`` the exception for the error code of an answer, None for no error. The broker classes
between the generated-section markers come from ``tools/generate_errors.py`` (with
``cproducer.protocol.ErrorCode``, the codes by Java's names); edit the table there.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class KafkaError(Exception):
    """Base of every error this package raises or completes a future with."""

    #: the Sender may retry a batch that failed with it (Java's RetriableException)
    retriable: bool = False
    #: the Sender refreshes metadata before it retries (Java's InvalidMetadataException)
    invalid_metadata: bool = False

    def __str__(self) -> str:
        if not self.args:
            return self.__class__.__name__
        return super().__str__()


class RetriableError(KafkaError):
    """The same request may succeed when sent again."""

    retriable = True


class InvalidMetadataError(RetriableError):
    """Retriable once the metadata is refreshed (a leader moved, a topic is being created...)."""

    invalid_metadata = True


# ---------------------------------------------------------------- client-side errors


class IllegalArgumentError(KafkaError, ValueError):
    """An argument has a value the method does not accept."""


class IllegalStateError(KafkaError):
    """An operation was called when the object was not in a state that allows it."""


class KafkaConfigurationError(KafkaError, ValueError):
    """A configuration key is unknown or its value is not allowed."""


#: cproducer's first name for KafkaConfigurationError
ConfigError = KafkaConfigurationError


class SerializationError(KafkaError, TypeError):
    """A key, value or header could not be turned into bytes."""


class InvalidPartitionError(IllegalArgumentError):
    """An explicit partition is negative or not below the topic's partition count."""


class ProducerClosedError(IllegalStateError):
    """The producer was closed: no new records are accepted; pending ones were aborted."""


class KafkaTimeoutError(RetriableError):
    """An operation did not finish within its bound (``max.block.ms``, delivery timeout...)."""


class BufferExhaustedError(KafkaTimeoutError):
    """No memory could be allocated from the BufferPool within ``max.block.ms``."""


class CommitFailedError(KafkaError):
    """Offsets could not be committed: the consumer group moved on (a rebalance) since the
    consumer's group metadata was taken (Java's CommitFailedException)."""


class TransactionAbortedError(KafkaError):
    """The record was not sent: its transaction was aborted before it could be (Java's
    TransactionAbortedException)."""


class KafkaConnectionError(InvalidMetadataError):
    """A connection failed or was closed while a request was in flight."""


#: cproducer's first name for KafkaConnectionError (not the broker's NETWORK_EXCEPTION code)
NetworkError = KafkaConnectionError


class KafkaProtocolError(KafkaError):
    """A peer broke the Kafka protocol."""


class CorruptResponseError(KafkaConnectionError, KafkaProtocolError):
    """A peer sent bytes that are not a valid response (bad length, wrong correlation id...):
    the connection is closed."""


class NodeNotReadyError(RetriableError):
    """The node has no connection ready for a request yet."""


class TooManyInFlightRequests(RetriableError):
    """The connection has ``max.in.flight.requests.per.connection`` requests out."""


class NoBrokersAvailable(InvalidMetadataError):
    """None of the known brokers can be reached."""


class UnsupportedCodecError(KafkaError, ImportError):
    """A compression codec's library is not installed."""


# ---------------------------------------------------------------- broker errors


class BrokerResponseError(KafkaError):
    """Base of every error that a broker reports with an error code."""

    #: the protocol error code
    errno: int = -1
    #: the code's name (``UNKNOWN_TOPIC_OR_PARTITION``)
    message: str = ""
    #: what the code means (the class's docstring)
    description: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "description" not in cls.__dict__:
            cls.description = cls.__doc__ or ""

    def __str__(self) -> str:
        base = f"[Error {self.errno}] {self.__class__.__name__}"
        if self.args and self.args[0]:
            return f"{base}: {super().__str__()}"
        return base


class AuthorizationError(BrokerResponseError):
    """The broker refused an operation to this client's principal."""


class AuthenticationError(BrokerResponseError):
    """A connection could not be authenticated (Java's AuthenticationException): a
    configuration problem, not retried. ``send()`` raises it while it waits for metadata, and
    records waiting to be sent fail with it. The SASL errors are its subclasses:
    ``SaslAuthenticationFailedError`` (Java's ``SaslAuthenticationException``; the message names
    the mechanism and carries the broker's reason, never a password or a token),
    ``UnsupportedSaslMechanismError`` (the message lists the broker's enabled mechanisms) and
    ``IllegalSaslStateError``."""


# ---- BEGIN GENERATED by tools/generate_errors.py: do not edit by hand ----


class UnknownError(BrokerResponseError):
    """The server experienced an unexpected error when processing the request."""

    errno = -1
    message = "UNKNOWN"


class NoError(BrokerResponseError):
    """No error: the request succeeded."""

    errno = 0
    message = "NO_ERROR"


class OffsetOutOfRangeError(BrokerResponseError):
    """The requested offset is not within the range of offsets maintained by the server."""

    errno = 1
    message = "OFFSET_OUT_OF_RANGE"


class CorruptRecordError(RetriableError, BrokerResponseError):
    """This message has failed its CRC checksum, exceeds the valid size, has a null key for a
    compacted topic, or is otherwise corrupt."""

    errno = 2
    message = "CORRUPT_MESSAGE"


class UnknownTopicOrPartitionError(InvalidMetadataError, BrokerResponseError):
    """This server does not host this topic-partition."""

    errno = 3
    message = "UNKNOWN_TOPIC_OR_PARTITION"


class InvalidFetchRequestError(BrokerResponseError):
    """The requested fetch size is invalid."""

    errno = 4
    message = "INVALID_FETCH_SIZE"


class LeaderNotAvailableError(InvalidMetadataError, BrokerResponseError):
    """There is no leader for this topic-partition as we are in the middle of a leadership
    election."""

    errno = 5
    message = "LEADER_NOT_AVAILABLE"


class NotLeaderForPartitionError(InvalidMetadataError, BrokerResponseError):
    """For requests intended only for the leader, this error indicates that the broker is not the
    current leader. For requests intended for any replica, this error indicates that the broker
    is not a replica of the topic partition."""

    errno = 6
    message = "NOT_LEADER_FOR_PARTITION"


class RequestTimedOutError(RetriableError, BrokerResponseError):
    """The request timed out."""

    errno = 7
    message = "REQUEST_TIMED_OUT"


class BrokerNotAvailableError(BrokerResponseError):
    """The broker is not available."""

    errno = 8
    message = "BROKER_NOT_AVAILABLE"


class ReplicaNotAvailableError(InvalidMetadataError, BrokerResponseError):
    """The replica is not available for the requested topic-partition. Produce/Fetch requests and
    other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the
    broker is not a replica of the topic-partition."""

    errno = 9
    message = "REPLICA_NOT_AVAILABLE"


class MessageSizeTooLargeError(BrokerResponseError, ValueError):
    """The request included a message larger than the max message size the server will accept."""

    errno = 10
    message = "MESSAGE_SIZE_TOO_LARGE"


class StaleControllerEpochError(BrokerResponseError):
    """The controller moved to another broker."""

    errno = 11
    message = "STALE_CONTROLLER_EPOCH"


class OffsetMetadataTooLargeError(BrokerResponseError):
    """The metadata field of the offset request was too large."""

    errno = 12
    message = "OFFSET_METADATA_TOO_LARGE"


class NetworkExceptionError(InvalidMetadataError, BrokerResponseError):
    """The server disconnected before a response was received."""

    errno = 13
    message = "NETWORK_EXCEPTION"


class CoordinatorLoadInProgressError(RetriableError, BrokerResponseError):
    """The coordinator is loading and hence can't process requests."""

    errno = 14
    message = "COORDINATOR_LOAD_IN_PROGRESS"


class CoordinatorNotAvailableError(RetriableError, BrokerResponseError):
    """The coordinator is not available."""

    errno = 15
    message = "COORDINATOR_NOT_AVAILABLE"


class NotCoordinatorError(RetriableError, BrokerResponseError):
    """This is not the correct coordinator."""

    errno = 16
    message = "NOT_COORDINATOR"


class InvalidTopicError(BrokerResponseError, ValueError):
    """The request attempted to perform an operation on an invalid topic."""

    errno = 17
    message = "INVALID_TOPIC"


class RecordListTooLargeError(BrokerResponseError):
    """The request included message batch larger than the configured segment size on the server."""

    errno = 18
    message = "RECORD_LIST_TOO_LARGE"


class NotEnoughReplicasError(RetriableError, BrokerResponseError):
    """Messages are rejected since there are fewer in-sync replicas than required."""

    errno = 19
    message = "NOT_ENOUGH_REPLICAS"


class NotEnoughReplicasAfterAppendError(RetriableError, BrokerResponseError):
    """Messages are written to the log, but to fewer in-sync replicas than required."""

    errno = 20
    message = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"


class InvalidRequiredAcksError(BrokerResponseError):
    """Produce request specified an invalid value for required acks."""

    errno = 21
    message = "INVALID_REQUIRED_ACKS"


class IllegalGenerationError(BrokerResponseError):
    """Specified group generation id is not valid."""

    errno = 22
    message = "ILLEGAL_GENERATION"


class InconsistentGroupProtocolError(BrokerResponseError):
    """The group member's supported protocols are incompatible with those of existing members or
    first group member tried to join with empty protocol type or empty protocol list."""

    errno = 23
    message = "INCONSISTENT_GROUP_PROTOCOL"


class InvalidGroupIdError(BrokerResponseError):
    """The configured groupId is invalid."""

    errno = 24
    message = "INVALID_GROUP_ID"


class UnknownMemberIdError(BrokerResponseError):
    """The coordinator is not aware of this member."""

    errno = 25
    message = "UNKNOWN_MEMBER_ID"


class InvalidSessionTimeoutError(BrokerResponseError):
    """The session timeout is not within the range allowed by the broker (as configured by
    group.min.session.timeout.ms and group.max.session.timeout.ms)."""

    errno = 26
    message = "INVALID_SESSION_TIMEOUT"


class RebalanceInProgressError(BrokerResponseError):
    """The group is rebalancing, so a rejoin is needed."""

    errno = 27
    message = "REBALANCE_IN_PROGRESS"


class InvalidCommitOffsetSizeError(BrokerResponseError):
    """The committing offset data size is not valid."""

    errno = 28
    message = "INVALID_COMMIT_OFFSET_SIZE"


class TopicAuthorizationFailedError(AuthorizationError):
    """Topic authorization failed."""

    errno = 29
    message = "TOPIC_AUTHORIZATION_FAILED"


class GroupAuthorizationFailedError(AuthorizationError):
    """Group authorization failed."""

    errno = 30
    message = "GROUP_AUTHORIZATION_FAILED"


class ClusterAuthorizationFailedError(AuthorizationError):
    """Cluster authorization failed."""

    errno = 31
    message = "CLUSTER_AUTHORIZATION_FAILED"


class InvalidTimestampError(BrokerResponseError):
    """The timestamp of the message is out of acceptable range."""

    errno = 32
    message = "INVALID_TIMESTAMP"


class UnsupportedSaslMechanismError(AuthenticationError):
    """The broker does not support the requested SASL mechanism."""

    errno = 33
    message = "UNSUPPORTED_SASL_MECHANISM"


class IllegalSaslStateError(AuthenticationError):
    """Request is not valid given the current SASL state."""

    errno = 34
    message = "ILLEGAL_SASL_STATE"


class UnsupportedVersionError(BrokerResponseError):
    """The version of API is not supported."""

    errno = 35
    message = "UNSUPPORTED_VERSION"


class TopicAlreadyExistsError(BrokerResponseError):
    """Topic with this name already exists."""

    errno = 36
    message = "TOPIC_ALREADY_EXISTS"


class InvalidPartitionsError(BrokerResponseError):
    """Number of partitions is below 1."""

    errno = 37
    message = "INVALID_PARTITIONS"


class InvalidReplicationFactorError(BrokerResponseError):
    """Replication factor is below 1 or larger than the number of available brokers."""

    errno = 38
    message = "INVALID_REPLICATION_FACTOR"


class InvalidReplicationAssignmentError(BrokerResponseError):
    """Replica assignment is invalid."""

    errno = 39
    message = "INVALID_REPLICATION_ASSIGNMENT"


class InvalidConfigurationError(BrokerResponseError):
    """Configuration is invalid."""

    errno = 40
    message = "INVALID_CONFIG"


class NotControllerError(RetriableError, BrokerResponseError):
    """This is not the correct controller for this cluster."""

    errno = 41
    message = "NOT_CONTROLLER"


class InvalidRequestError(BrokerResponseError):
    """This most likely occurs because of a request being malformed by the client library or the
    message was sent to an incompatible broker. See the broker logs for more details."""

    errno = 42
    message = "INVALID_REQUEST"


class UnsupportedForMessageFormatError(BrokerResponseError):
    """The message format version on the broker does not support the request."""

    errno = 43
    message = "UNSUPPORTED_FOR_MESSAGE_FORMAT"


class PolicyViolationError(BrokerResponseError):
    """Request parameters do not satisfy the configured policy."""

    errno = 44
    message = "POLICY_VIOLATION"


class OutOfOrderSequenceNumberError(BrokerResponseError):
    """The broker received an out of order sequence number."""

    errno = 45
    message = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class DuplicateSequenceNumberError(BrokerResponseError):
    """The broker received a duplicate sequence number."""

    errno = 46
    message = "DUPLICATE_SEQUENCE_NUMBER"


class InvalidProducerEpochError(BrokerResponseError):
    """Producer attempted to produce with an old epoch."""

    errno = 47
    message = "INVALID_PRODUCER_EPOCH"


class InvalidTxnStateError(BrokerResponseError):
    """The producer attempted a transactional operation in an invalid state."""

    errno = 48
    message = "INVALID_TXN_STATE"


class InvalidProducerIdMappingError(BrokerResponseError):
    """The producer attempted to use a producer id which is not currently assigned to its
    transactional id."""

    errno = 49
    message = "INVALID_PRODUCER_ID_MAPPING"


class InvalidTransactionTimeoutError(BrokerResponseError):
    """The transaction timeout is larger than the maximum value allowed by the broker (as
    configured by transaction.max.timeout.ms)."""

    errno = 50
    message = "INVALID_TRANSACTION_TIMEOUT"


class ConcurrentTransactionsError(RetriableError, BrokerResponseError):
    """The producer attempted to update a transaction while another concurrent operation on the
    same transaction was ongoing."""

    errno = 51
    message = "CONCURRENT_TRANSACTIONS"


class TransactionCoordinatorFencedError(BrokerResponseError):
    """Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current
    coordinator for a given producer."""

    errno = 52
    message = "TRANSACTION_COORDINATOR_FENCED"


class TransactionalIdAuthorizationFailedError(AuthorizationError):
    """Transactional Id authorization failed."""

    errno = 53
    message = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


class SecurityDisabledError(BrokerResponseError):
    """Security features are disabled."""

    errno = 54
    message = "SECURITY_DISABLED"


class OperationNotAttemptedError(BrokerResponseError):
    """The broker did not attempt to execute this operation. This may happen for batched RPCs where
    some operations in the batch failed, causing the broker to respond without trying the rest."""

    errno = 55
    message = "OPERATION_NOT_ATTEMPTED"


class KafkaStorageError(InvalidMetadataError, BrokerResponseError):
    """Disk error when trying to access log file on the disk."""

    errno = 56
    message = "KAFKA_STORAGE_ERROR"


class LogDirNotFoundError(BrokerResponseError):
    """The user-specified log directory is not found in the broker config."""

    errno = 57
    message = "LOG_DIR_NOT_FOUND"


class SaslAuthenticationFailedError(AuthenticationError):
    """SASL Authentication failed."""

    errno = 58
    message = "SASL_AUTHENTICATION_FAILED"


class UnknownProducerIdError(BrokerResponseError):
    """This exception is raised by the broker if it could not locate the producer metadata
    associated with the producerId in question. This could happen if, for instance, the
    producer's records were deleted because their retention time had elapsed. Once the last
    records of the producerId are removed, the producer's metadata is removed from the broker,
    and future appends by the producer will return this exception."""

    errno = 59
    message = "UNKNOWN_PRODUCER_ID"


class ReassignmentInProgressError(BrokerResponseError):
    """A partition reassignment is in progress."""

    errno = 60
    message = "REASSIGNMENT_IN_PROGRESS"


class DelegationTokenAuthDisabledError(BrokerResponseError):
    """Delegation Token feature is not enabled."""

    errno = 61
    message = "DELEGATION_TOKEN_AUTH_DISABLED"


class DelegationTokenNotFoundError(BrokerResponseError):
    """Delegation Token is not found on server."""

    errno = 62
    message = "DELEGATION_TOKEN_NOT_FOUND"


class DelegationTokenOwnerMismatchError(BrokerResponseError):
    """Specified Principal is not valid Owner/Renewer."""

    errno = 63
    message = "DELEGATION_TOKEN_OWNER_MISMATCH"


class DelegationTokenRequestNotAllowedError(BrokerResponseError):
    """Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation
    token authenticated channels."""

    errno = 64
    message = "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"


class DelegationTokenAuthorizationFailedError(AuthorizationError):
    """Delegation Token authorization failed."""

    errno = 65
    message = "DELEGATION_TOKEN_AUTHORIZATION_FAILED"


class DelegationTokenExpiredError(BrokerResponseError):
    """Delegation Token is expired."""

    errno = 66
    message = "DELEGATION_TOKEN_EXPIRED"


class InvalidPrincipalTypeError(BrokerResponseError):
    """Supplied principalType is not supported."""

    errno = 67
    message = "INVALID_PRINCIPAL_TYPE"


class NonEmptyGroupError(BrokerResponseError):
    """The group is not empty."""

    errno = 68
    message = "NON_EMPTY_GROUP"


class GroupIdNotFoundError(BrokerResponseError):
    """The group id does not exist."""

    errno = 69
    message = "GROUP_ID_NOT_FOUND"


class FetchSessionIdNotFoundError(RetriableError, BrokerResponseError):
    """The fetch session ID was not found."""

    errno = 70
    message = "FETCH_SESSION_ID_NOT_FOUND"


class InvalidFetchSessionEpochError(RetriableError, BrokerResponseError):
    """The fetch session epoch is invalid."""

    errno = 71
    message = "INVALID_FETCH_SESSION_EPOCH"


class ListenerNotFoundError(InvalidMetadataError, BrokerResponseError):
    """There is no listener on the leader broker that matches the listener on which metadata
    request was processed."""

    errno = 72
    message = "LISTENER_NOT_FOUND"


class TopicDeletionDisabledError(BrokerResponseError):
    """Topic deletion is disabled."""

    errno = 73
    message = "TOPIC_DELETION_DISABLED"


class FencedLeaderEpochError(InvalidMetadataError, BrokerResponseError):
    """The leader epoch in the request is older than the epoch on the broker."""

    errno = 74
    message = "FENCED_LEADER_EPOCH"


class UnknownLeaderEpochError(InvalidMetadataError, BrokerResponseError):
    """The leader epoch in the request is newer than the epoch on the broker."""

    errno = 75
    message = "UNKNOWN_LEADER_EPOCH"


class UnsupportedCompressionTypeError(BrokerResponseError):
    """The requesting client does not support the compression type of given partition."""

    errno = 76
    message = "UNSUPPORTED_COMPRESSION_TYPE"


class StaleBrokerEpochError(BrokerResponseError):
    """Broker epoch has changed."""

    errno = 77
    message = "STALE_BROKER_EPOCH"


class OffsetNotAvailableError(RetriableError, BrokerResponseError):
    """The leader high watermark has not caught up from a recent leader election so the offsets
    cannot be guaranteed to be monotonically increasing."""

    errno = 78
    message = "OFFSET_NOT_AVAILABLE"


class MemberIdRequiredError(BrokerResponseError):
    """The group member needs to have a valid member id before actually entering a consumer group.
    The group member needs to have a valid member id before actually entering a consumer group."""

    errno = 79
    message = "MEMBER_ID_REQUIRED"


class PreferredLeaderNotAvailableError(InvalidMetadataError, BrokerResponseError):
    """The preferred leader was not available."""

    errno = 80
    message = "PREFERRED_LEADER_NOT_AVAILABLE"


class GroupMaxSizeReachedError(BrokerResponseError):
    """The consumer group has reached its max size."""

    errno = 81
    message = "GROUP_MAX_SIZE_REACHED"


class FencedInstanceIdError(BrokerResponseError):
    """The broker rejected this static consumer since another consumer with the same
    group.instance.id has registered with a different member.id."""

    errno = 82
    message = "FENCED_INSTANCE_ID"


class EligibleLeadersNotAvailableError(InvalidMetadataError, BrokerResponseError):
    """Eligible topic partition leaders are not available."""

    errno = 83
    message = "ELIGIBLE_LEADERS_NOT_AVAILABLE"


class ElectionNotNeededError(InvalidMetadataError, BrokerResponseError):
    """Leader election not needed for topic partition."""

    errno = 84
    message = "ELECTION_NOT_NEEDED"


class NoReassignmentInProgressError(BrokerResponseError):
    """No partition reassignment is in progress."""

    errno = 85
    message = "NO_REASSIGNMENT_IN_PROGRESS"


class GroupSubscribedToTopicError(BrokerResponseError):
    """Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to
    it."""

    errno = 86
    message = "GROUP_SUBSCRIBED_TO_TOPIC"


class InvalidRecordError(BrokerResponseError):
    """This record has failed the validation on broker and hence will be rejected."""

    errno = 87
    message = "INVALID_RECORD"


class UnstableOffsetCommitError(RetriableError, BrokerResponseError):
    """There are unstable offsets that need to be cleared."""

    errno = 88
    message = "UNSTABLE_OFFSET_COMMIT"


class ThrottlingQuotaExceededError(RetriableError, BrokerResponseError):
    """The throttling quota has been exceeded."""

    errno = 89
    message = "THROTTLING_QUOTA_EXCEEDED"


class ProducerFencedError(BrokerResponseError):
    """There is a newer producer with the same transactionalId which fences the current one."""

    errno = 90
    message = "PRODUCER_FENCED"


class ResourceNotFoundError(BrokerResponseError):
    """A request illegally referred to a resource that does not exist."""

    errno = 91
    message = "RESOURCE_NOT_FOUND"


class DuplicateResourceError(BrokerResponseError):
    """A request illegally referred to the same resource twice."""

    errno = 92
    message = "DUPLICATE_RESOURCE"


class UnacceptableCredentialError(BrokerResponseError):
    """Requested credential would not meet criteria for acceptability."""

    errno = 93
    message = "UNACCEPTABLE_CREDENTIAL"


class InconsistentVoterSetError(BrokerResponseError):
    """Indicates that the either the sender or recipient of a voter-only request is not one of the
    expected voters."""

    errno = 94
    message = "INCONSISTENT_VOTER_SET"


class InvalidUpdateVersionError(BrokerResponseError):
    """The given update version was invalid."""

    errno = 95
    message = "INVALID_UPDATE_VERSION"


class FeatureUpdateFailedError(BrokerResponseError):
    """Unable to update finalized features due to an unexpected server error."""

    errno = 96
    message = "FEATURE_UPDATE_FAILED"


class PrincipalDeserializationFailureError(BrokerResponseError):
    """Request principal deserialization failed during forwarding. This indicates an internal error
    on the broker cluster security setup."""

    errno = 97
    message = "PRINCIPAL_DESERIALIZATION_FAILURE"


class SnapshotNotFoundError(BrokerResponseError):
    """Requested snapshot was not found."""

    errno = 98
    message = "SNAPSHOT_NOT_FOUND"


class PositionOutOfRangeError(BrokerResponseError):
    """Requested position is not greater than or equal to zero, and less than the size of the
    snapshot."""

    errno = 99
    message = "POSITION_OUT_OF_RANGE"


class UnknownTopicIdError(InvalidMetadataError, BrokerResponseError):
    """This server does not host this topic ID."""

    errno = 100
    message = "UNKNOWN_TOPIC_ID"


class DuplicateBrokerRegistrationError(BrokerResponseError):
    """This broker ID is already in use."""

    errno = 101
    message = "DUPLICATE_BROKER_REGISTRATION"


class BrokerIdNotRegisteredError(BrokerResponseError):
    """The given broker ID was not registered."""

    errno = 102
    message = "BROKER_ID_NOT_REGISTERED"


class InconsistentTopicIdError(InvalidMetadataError, BrokerResponseError):
    """The log's topic ID did not match the topic ID in the request."""

    errno = 103
    message = "INCONSISTENT_TOPIC_ID"


class InconsistentClusterIdError(BrokerResponseError):
    """The clusterId in the request does not match that found on the server."""

    errno = 104
    message = "INCONSISTENT_CLUSTER_ID"


class TransactionalIdNotFoundError(BrokerResponseError):
    """The transactionalId could not be found."""

    errno = 105
    message = "TRANSACTIONAL_ID_NOT_FOUND"


class FetchSessionTopicIdError(RetriableError, BrokerResponseError):
    """The fetch session encountered inconsistent topic ID usage."""

    errno = 106
    message = "FETCH_SESSION_TOPIC_ID_ERROR"


class IneligibleReplicaError(BrokerResponseError):
    """The new ISR contains at least one ineligible replica."""

    errno = 107
    message = "INELIGIBLE_REPLICA"


class NewLeaderElectedError(BrokerResponseError):
    """The AlterPartition request successfully updated the partition state but the leader has
    changed."""

    errno = 108
    message = "NEW_LEADER_ELECTED"


class OffsetMovedToTieredStorageError(BrokerResponseError):
    """The requested offset is moved to tiered storage."""

    errno = 109
    message = "OFFSET_MOVED_TO_TIERED_STORAGE"


class FencedMemberEpochError(BrokerResponseError):
    """The member epoch is fenced by the group coordinator. The member must abandon all its
    partitions and rejoin."""

    errno = 110
    message = "FENCED_MEMBER_EPOCH"


class UnreleasedInstanceIdError(BrokerResponseError):
    """The instance ID is still used by another member in the consumer group. That member must
    leave first."""

    errno = 111
    message = "UNRELEASED_INSTANCE_ID"


class UnsupportedAssignorError(BrokerResponseError):
    """The assignor or its version range is not supported by the consumer group."""

    errno = 112
    message = "UNSUPPORTED_ASSIGNOR"


class StaleMemberEpochError(BrokerResponseError):
    """The member epoch is stale. The member must retry after receiving its updated member epoch
    via the ConsumerGroupHeartbeat API."""

    errno = 113
    message = "STALE_MEMBER_EPOCH"


class MismatchedEndpointTypeError(BrokerResponseError):
    """The request was sent to an endpoint of the wrong type."""

    errno = 114
    message = "MISMATCHED_ENDPOINT_TYPE"


class UnsupportedEndpointTypeError(BrokerResponseError):
    """This endpoint type is not supported yet."""

    errno = 115
    message = "UNSUPPORTED_ENDPOINT_TYPE"


class UnknownControllerIdError(BrokerResponseError):
    """This controller ID is not known."""

    errno = 116
    message = "UNKNOWN_CONTROLLER_ID"


class UnknownSubscriptionIdError(BrokerResponseError):
    """Client sent a push telemetry request with an invalid or outdated subscription ID."""

    errno = 117
    message = "UNKNOWN_SUBSCRIPTION_ID"


class TelemetryTooLargeError(BrokerResponseError):
    """Client sent a push telemetry request larger than the maximum size the broker will accept."""

    errno = 118
    message = "TELEMETRY_TOO_LARGE"


class InvalidRegistrationError(BrokerResponseError):
    """The controller has considered the broker registration to be invalid."""

    errno = 119
    message = "INVALID_REGISTRATION"


class TransactionAbortableError(BrokerResponseError):
    """The server encountered an error with the transaction. The client can abort the transaction
    to continue using this transactional ID."""

    errno = 120
    message = "TRANSACTION_ABORTABLE"


class InvalidRecordStateError(BrokerResponseError):
    """The record state is invalid. The acknowledgement of delivery could not be completed."""

    errno = 121
    message = "INVALID_RECORD_STATE"


class ShareSessionNotFoundError(RetriableError, BrokerResponseError):
    """The share session was not found."""

    errno = 122
    message = "SHARE_SESSION_NOT_FOUND"


class InvalidShareSessionEpochError(RetriableError, BrokerResponseError):
    """The share session epoch is invalid."""

    errno = 123
    message = "INVALID_SHARE_SESSION_EPOCH"


class FencedStateEpochError(BrokerResponseError):
    """The share coordinator rejected the request because the share-group state epoch did not
    match."""

    errno = 124
    message = "FENCED_STATE_EPOCH"


class InvalidVoterKeyError(BrokerResponseError):
    """The voter key doesn't match the receiving replica's key."""

    errno = 125
    message = "INVALID_VOTER_KEY"


class DuplicateVoterError(BrokerResponseError):
    """The voter is already part of the set of voters."""

    errno = 126
    message = "DUPLICATE_VOTER"


class VoterNotFoundError(BrokerResponseError):
    """The voter is not part of the set of voters."""

    errno = 127
    message = "VOTER_NOT_FOUND"


class InvalidRegularExpressionError(BrokerResponseError):
    """The regular expression is not valid."""

    errno = 128
    message = "INVALID_REGULAR_EXPRESSION"


class RebootstrapRequiredError(BrokerResponseError):
    """Client metadata is stale. The client should rebootstrap to obtain new metadata."""

    errno = 129
    message = "REBOOTSTRAP_REQUIRED"


class StreamsInvalidTopologyError(BrokerResponseError):
    """The supplied topology is invalid."""

    errno = 130
    message = "STREAMS_INVALID_TOPOLOGY"


class StreamsInvalidTopologyEpochError(BrokerResponseError):
    """The supplied topology epoch is invalid."""

    errno = 131
    message = "STREAMS_INVALID_TOPOLOGY_EPOCH"


class StreamsTopologyFencedError(BrokerResponseError):
    """The supplied topology epoch is outdated."""

    errno = 132
    message = "STREAMS_TOPOLOGY_FENCED"


class ShareSessionLimitReachedError(RetriableError, BrokerResponseError):
    """The limit of share sessions has been reached."""

    errno = 133
    message = "SHARE_SESSION_LIMIT_REACHED"


# the same classes under the Java client's names and earlier spellings
UnknownServerError = UnknownError
CorruptRecordException = CorruptRecordError
InvalidFetchSizeError = InvalidFetchRequestError
NotLeaderOrFollowerError = NotLeaderForPartitionError
RecordTooLargeError = MessageSizeTooLargeError
ControllerMovedError = StaleControllerEpochError
InvalidTopicExceptionError = InvalidTopicError
RecordBatchTooLargeError = RecordListTooLargeError
TopicAuthorizationError = TopicAuthorizationFailedError
GroupAuthorizationError = GroupAuthorizationFailedError
ClusterAuthorizationError = ClusterAuthorizationFailedError
TopicExistsError = TopicAlreadyExistsError
InvalidReplicaAssignmentError = InvalidReplicationAssignmentError
OutOfOrderSequenceError = OutOfOrderSequenceNumberError
DuplicateSequenceError = DuplicateSequenceNumberError
InvalidPidMappingError = InvalidProducerIdMappingError
InvalidTxnTimeoutError = InvalidTransactionTimeoutError
TransactionalIdAuthorizationError = TransactionalIdAuthorizationFailedError
SaslAuthenticationError = SaslAuthenticationFailedError
DelegationTokenDisabledError = DelegationTokenAuthDisabledError
UnsupportedByAuthenticationError = DelegationTokenRequestNotAllowedError
DelegationTokenAuthorizationError = DelegationTokenAuthorizationFailedError
GroupNotEmptyError = NonEmptyGroupError
PrincipalDeserializationError = PrincipalDeserializationFailureError
# ---- END GENERATED ----


class IncompatibleBrokerVersion(UnsupportedVersionError):
    """The broker does not speak a version of an API that the operation needs."""


_CLASS_BY_CODE: Dict[int, Type[BrokerResponseError]] = {
    cls.errno: cls
    for cls in list(globals().values())
    if isinstance(cls, type)
    and issubclass(cls, BrokerResponseError)
    and cls is not BrokerResponseError
    and "errno" in cls.__dict__
    and cls.__module__ == __name__
}


def for_code(error_code: int) -> Type[BrokerResponseError]:
    """The class of a protocol error code (``NoError`` for 0), as kafka-python's ``for_code``.

    A code this table does not know gets an ``UnknownError`` subclass that keeps the code (made
    once per code), as a newer broker's code should not lose its number."""
    cls = _CLASS_BY_CODE.get(error_code)
    if cls is None:
        cls = type(
            "UnrecognizedBrokerError",
            (UnknownError,),
            {
                "errno": error_code,
                "message": f"UNRECOGNIZED_ERROR_{error_code}",
                "__doc__": f"An error code this client does not know ({error_code}).",
                "__module__": __name__,
            },
        )
        cls = _CLASS_BY_CODE.setdefault(error_code, cls)
    return cls


def exception_for(error_code: int, message: Optional[str] = None) -> Optional[BrokerResponseError]:
    """The exception for the error code of an answer (with the broker's message, if any), or
    None for code 0 (Java's ``Errors.forCode(code).exception(message)``)."""
    if error_code == NoError.errno:
        return None
    cls = for_code(error_code)
    return cls(message) if message else cls()


#: cproducer's first name for for_code
error_class = for_code
