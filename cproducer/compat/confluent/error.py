"""confluent-kafka's error types with librdkafka's error codes.

``KafkaError`` is a value (not an exception), as in confluent-kafka: ``code()``, ``name()``,
``str()``, ``fatal()``, ``retriable()``, ``txn_requires_abort()``; it compares equal to its code.
``KafkaException(KafkaError)`` is what the facade raises; ``exc.args[0]`` is the ``KafkaError``.
The class attributes (``KafkaError._MSG_TIMED_OUT``, ``KafkaError.UNKNOWN_TOPIC_OR_PART``, ...)
are librdkafka's ``rd_kafka_resp_err_t`` values: negative codes are the client's own, positive
ones are Kafka's protocol error codes.

``from_exception`` turns a cproducer exception into the ``KafkaError`` librdkafka reports for the
same failure (a record that expired is ``_MSG_TIMED_OUT``, a broker error keeps its code, ...).
"""

from __future__ import annotations

import builtins
from typing import Any, Dict, Optional, Tuple

from cproducer import errors

#: librdkafka's error codes (rdkafka.h ``rd_kafka_resp_err_t``), name without the
#: ``RD_KAFKA_RESP_ERR_`` prefix. Where librdkafka has two names for one code, the first is the
#: one ``name()`` returns.
_CODES: Tuple[Tuple[str, int], ...] = (
    ("_BAD_MSG", -199),
    ("_BAD_COMPRESSION", -198),
    ("_DESTROY", -197),
    ("_FAIL", -196),
    ("_TRANSPORT", -195),
    ("_CRIT_SYS_RESOURCE", -194),
    ("_RESOLVE", -193),
    ("_MSG_TIMED_OUT", -192),
    ("_PARTITION_EOF", -191),
    ("_UNKNOWN_PARTITION", -190),
    ("_FS", -189),
    ("_UNKNOWN_TOPIC", -188),
    ("_ALL_BROKERS_DOWN", -187),
    ("_INVALID_ARG", -186),
    ("_TIMED_OUT", -185),
    ("_QUEUE_FULL", -184),
    ("_ISR_INSUFF", -183),
    ("_NODE_UPDATE", -182),
    ("_SSL", -181),
    ("_WAIT_COORD", -180),
    ("_UNKNOWN_GROUP", -179),
    ("_IN_PROGRESS", -178),
    ("_PREV_IN_PROGRESS", -177),
    ("_EXISTING_SUBSCRIPTION", -176),
    ("_ASSIGN_PARTITIONS", -175),
    ("_REVOKE_PARTITIONS", -174),
    ("_CONFLICT", -173),
    ("_STATE", -172),
    ("_UNKNOWN_PROTOCOL", -171),
    ("_NOT_IMPLEMENTED", -170),
    ("_AUTHENTICATION", -169),
    ("_NO_OFFSET", -168),
    ("_OUTDATED", -167),
    ("_TIMED_OUT_QUEUE", -166),
    ("_UNSUPPORTED_FEATURE", -165),
    ("_WAIT_CACHE", -164),
    ("_INTR", -163),
    ("_KEY_SERIALIZATION", -162),
    ("_VALUE_SERIALIZATION", -161),
    ("_KEY_DESERIALIZATION", -160),
    ("_VALUE_DESERIALIZATION", -159),
    ("_PARTIAL", -158),
    ("_READ_ONLY", -157),
    ("_NOENT", -156),
    ("_UNDERFLOW", -155),
    ("_INVALID_TYPE", -154),
    ("_RETRY", -153),
    ("_PURGE_QUEUE", -152),
    ("_PURGE_INFLIGHT", -151),
    ("_FATAL", -150),
    ("_INCONSISTENT", -149),
    ("_GAPLESS_GUARANTEE", -148),
    ("_MAX_POLL_EXCEEDED", -147),
    ("_UNKNOWN_BROKER", -146),
    ("_NOT_CONFIGURED", -145),
    ("_FENCED", -144),
    ("_APPLICATION", -143),
    ("_ASSIGNMENT_LOST", -142),
    ("_NOOP", -141),
    ("_AUTO_OFFSET_RESET", -140),
    ("_LOG_TRUNCATION", -139),
    ("_INVALID_DIFFERENT_RECORD", -138),
    ("_DESTROY_BROKER", -137),
    ("UNKNOWN", -1),
    ("NO_ERROR", 0),
    ("OFFSET_OUT_OF_RANGE", 1),
    ("INVALID_MSG", 2),
    ("UNKNOWN_TOPIC_OR_PART", 3),
    ("INVALID_MSG_SIZE", 4),
    ("LEADER_NOT_AVAILABLE", 5),
    ("NOT_LEADER_FOR_PARTITION", 6),
    ("REQUEST_TIMED_OUT", 7),
    ("BROKER_NOT_AVAILABLE", 8),
    ("REPLICA_NOT_AVAILABLE", 9),
    ("MSG_SIZE_TOO_LARGE", 10),
    ("STALE_CTRL_EPOCH", 11),
    ("OFFSET_METADATA_TOO_LARGE", 12),
    ("NETWORK_EXCEPTION", 13),
    ("COORDINATOR_LOAD_IN_PROGRESS", 14),
    ("COORDINATOR_NOT_AVAILABLE", 15),
    ("NOT_COORDINATOR", 16),
    ("TOPIC_EXCEPTION", 17),
    ("RECORD_LIST_TOO_LARGE", 18),
    ("NOT_ENOUGH_REPLICAS", 19),
    ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", 20),
    ("INVALID_REQUIRED_ACKS", 21),
    ("ILLEGAL_GENERATION", 22),
    ("INCONSISTENT_GROUP_PROTOCOL", 23),
    ("INVALID_GROUP_ID", 24),
    ("UNKNOWN_MEMBER_ID", 25),
    ("INVALID_SESSION_TIMEOUT", 26),
    ("REBALANCE_IN_PROGRESS", 27),
    ("INVALID_COMMIT_OFFSET_SIZE", 28),
    ("TOPIC_AUTHORIZATION_FAILED", 29),
    ("GROUP_AUTHORIZATION_FAILED", 30),
    ("CLUSTER_AUTHORIZATION_FAILED", 31),
    ("INVALID_TIMESTAMP", 32),
    ("UNSUPPORTED_SASL_MECHANISM", 33),
    ("ILLEGAL_SASL_STATE", 34),
    ("UNSUPPORTED_VERSION", 35),
    ("TOPIC_ALREADY_EXISTS", 36),
    ("INVALID_PARTITIONS", 37),
    ("INVALID_REPLICATION_FACTOR", 38),
    ("INVALID_REPLICA_ASSIGNMENT", 39),
    ("INVALID_CONFIG", 40),
    ("NOT_CONTROLLER", 41),
    ("INVALID_REQUEST", 42),
    ("UNSUPPORTED_FOR_MESSAGE_FORMAT", 43),
    ("POLICY_VIOLATION", 44),
    ("OUT_OF_ORDER_SEQUENCE_NUMBER", 45),
    ("DUPLICATE_SEQUENCE_NUMBER", 46),
    ("INVALID_PRODUCER_EPOCH", 47),
    ("INVALID_TXN_STATE", 48),
    ("INVALID_PRODUCER_ID_MAPPING", 49),
    ("INVALID_TRANSACTION_TIMEOUT", 50),
    ("CONCURRENT_TRANSACTIONS", 51),
    ("TRANSACTION_COORDINATOR_FENCED", 52),
    ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 53),
    ("SECURITY_DISABLED", 54),
    ("OPERATION_NOT_ATTEMPTED", 55),
    ("KAFKA_STORAGE_ERROR", 56),
    ("LOG_DIR_NOT_FOUND", 57),
    ("SASL_AUTHENTICATION_FAILED", 58),
    ("UNKNOWN_PRODUCER_ID", 59),
    ("REASSIGNMENT_IN_PROGRESS", 60),
    ("DELEGATION_TOKEN_AUTH_DISABLED", 61),
    ("DELEGATION_TOKEN_NOT_FOUND", 62),
    ("DELEGATION_TOKEN_OWNER_MISMATCH", 63),
    ("DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", 64),
    ("DELEGATION_TOKEN_AUTHORIZATION_FAILED", 65),
    ("DELEGATION_TOKEN_EXPIRED", 66),
    ("INVALID_PRINCIPAL_TYPE", 67),
    ("NON_EMPTY_GROUP", 68),
    ("GROUP_ID_NOT_FOUND", 69),
    ("FETCH_SESSION_ID_NOT_FOUND", 70),
    ("INVALID_FETCH_SESSION_EPOCH", 71),
    ("LISTENER_NOT_FOUND", 72),
    ("TOPIC_DELETION_DISABLED", 73),
    ("FENCED_LEADER_EPOCH", 74),
    ("UNKNOWN_LEADER_EPOCH", 75),
    ("UNSUPPORTED_COMPRESSION_TYPE", 76),
    ("STALE_BROKER_EPOCH", 77),
    ("OFFSET_NOT_AVAILABLE", 78),
    ("MEMBER_ID_REQUIRED", 79),
    ("PREFERRED_LEADER_NOT_AVAILABLE", 80),
    ("GROUP_MAX_SIZE_REACHED", 81),
    ("FENCED_INSTANCE_ID", 82),
    ("ELIGIBLE_LEADERS_NOT_AVAILABLE", 83),
    ("ELECTION_NOT_NEEDED", 84),
    ("NO_REASSIGNMENT_IN_PROGRESS", 85),
    ("GROUP_SUBSCRIBED_TO_TOPIC", 86),
    ("INVALID_RECORD", 87),
    ("UNSTABLE_OFFSET_COMMIT", 88),
    ("THROTTLING_QUOTA_EXCEEDED", 89),
    ("PRODUCER_FENCED", 90),
    ("RESOURCE_NOT_FOUND", 91),
    ("DUPLICATE_RESOURCE", 92),
    ("UNACCEPTABLE_CREDENTIAL", 93),
    ("INCONSISTENT_VOTER_SET", 94),
    ("INVALID_UPDATE_VERSION", 95),
    ("FEATURE_UPDATE_FAILED", 96),
    ("PRINCIPAL_DESERIALIZATION_FAILURE", 97),
    ("UNKNOWN_TOPIC_ID", 100),
    ("INCONSISTENT_TOPIC_ID", 103),
    ("FENCED_MEMBER_EPOCH", 110),
    ("UNRELEASED_INSTANCE_ID", 111),
    ("UNSUPPORTED_ASSIGNOR", 112),
    ("STALE_MEMBER_EPOCH", 113),
    ("MISMATCHED_ENDPOINT_TYPE", 114),
    ("UNSUPPORTED_ENDPOINT_TYPE", 115),
    ("UNKNOWN_CONTROLLER_ID", 116),
    ("UNKNOWN_SUBSCRIPTION_ID", 117),
    ("TELEMETRY_TOO_LARGE", 118),
    ("INVALID_REGISTRATION", 119),
    ("TRANSACTION_ABORTABLE", 120),
    ("INVALID_RECORD_STATE", 121),
    ("SHARE_SESSION_NOT_FOUND", 122),
    ("INVALID_SHARE_SESSION_EPOCH", 123),
    ("FENCED_STATE_EPOCH", 124),
    ("INVALID_VOTER_KEY", 125),
    ("DUPLICATE_VOTER", 126),
    ("VOTER_NOT_FOUND", 127),
    ("INVALID_REGULAR_EXPRESSION", 128),
    ("REBOOTSTRAP_REQUIRED", 129),
    ("STREAMS_INVALID_TOPOLOGY", 130),
    ("STREAMS_INVALID_TOPOLOGY_EPOCH", 131),
    ("STREAMS_TOPOLOGY_FENCED", 132),
    ("SHARE_SESSION_LIMIT_REACHED", 133),
)

_NAME_BY_CODE: Dict[int, str] = {}
for _name, _code in _CODES:
    _NAME_BY_CODE.setdefault(_code, _name)

# What str() says for the codes this facade reports itself (librdkafka's wording, so that
# messages in logs read the same after the switch); other codes get "Local:"/"Broker:" + name.
_DESCRIPTIONS_BY_NAME: Dict[str, str] = {
    "_BAD_MSG": "Local: Bad message format",
    "_DESTROY": "Local: Broker handle destroyed for termination",
    "_FAIL": "Local: Communication failure with broker",
    "_TRANSPORT": "Local: Broker transport failure",
    "_MSG_TIMED_OUT": "Local: Message timed out",
    "_UNKNOWN_PARTITION": "Local: Unknown partition",
    "_UNKNOWN_TOPIC": "Local: Unknown topic",
    "_ALL_BROKERS_DOWN": "Local: All broker connections are down",
    "_INVALID_ARG": "Local: Invalid argument or configuration",
    "_TIMED_OUT": "Local: Timed out",
    "_QUEUE_FULL": "Local: Queue full",
    "_STATE": "Local: Erroneous state",
    "_KEY_SERIALIZATION": "Local: Key serialization error",
    "_VALUE_SERIALIZATION": "Local: Value serialization error",
    "_PURGE_QUEUE": "Local: Purged in queue",
    "_PURGE_INFLIGHT": "Local: Purged in flight",
    "_FATAL": "Local: Fatal error",
    "_INCONSISTENT": "Local: Inconsistent state",
    "_NOT_CONFIGURED": "Local: Functionality not configured",
    "_FENCED": "Local: This instance has been fenced by a newer instance",
    "MSG_SIZE_TOO_LARGE": "Broker: Message size too large",
}
_CODE_BY_NAME: Dict[str, int] = dict(_CODES)
_DESCRIPTIONS: Dict[int, str] = {_CODE_BY_NAME[n]: d for n, d in _DESCRIPTIONS_BY_NAME.items()}


def code(name: str) -> int:
    """librdkafka's code for ``name`` (``code("_MSG_TIMED_OUT") == -192``)."""
    return _CODE_BY_NAME[name]


# the codes the facade reports itself, by name
MSG_TIMED_OUT = code("_MSG_TIMED_OUT")
QUEUE_FULL = code("_QUEUE_FULL")
PURGE_QUEUE = code("_PURGE_QUEUE")
PURGE_INFLIGHT = code("_PURGE_INFLIGHT")
DESTROY = code("_DESTROY")
FAIL = code("_FAIL")
TRANSPORT = code("_TRANSPORT")
ALL_BROKERS_DOWN = code("_ALL_BROKERS_DOWN")
STATE = code("_STATE")
FENCED = code("_FENCED")
INCONSISTENT = code("_INCONSISTENT")
TIMED_OUT = code("_TIMED_OUT")
NOT_CONFIGURED = code("_NOT_CONFIGURED")
INVALID_ARG = code("_INVALID_ARG")
UNKNOWN_PARTITION = code("_UNKNOWN_PARTITION")
BAD_MSG = code("_BAD_MSG")
MSG_SIZE_TOO_LARGE = code("MSG_SIZE_TOO_LARGE")


def error_name(code: int) -> str:
    """librdkafka's name of ``code`` (``"_MSG_TIMED_OUT"``, ``"UNKNOWN_TOPIC_OR_PART"``)."""
    name = _NAME_BY_CODE.get(code)
    return name if name is not None else f"ERR_{code}?"


def error_description(code: int) -> str:
    text = _DESCRIPTIONS.get(code)
    if text is not None:
        return text
    name = _NAME_BY_CODE.get(code)
    if name is None:
        return f"Err-{code}?"
    words = name.strip("_").replace("_", " ").lower()
    return ("Local: " if code < 0 else "Broker: ") + words[:1].upper() + words[1:]


class KafkaError:
    """An error code with its description and flags (confluent-kafka's ``KafkaError``)."""

    __slots__ = ("_code", "_reason", "_fatal", "_retriable", "_txn_requires_abort")

    def __init__(
        self,
        error: int,
        reason: Optional[builtins.str] = None,
        fatal: bool = False,
        retriable: bool = False,
        txn_requires_abort: bool = False,
    ) -> None:
        if isinstance(error, bool) or not isinstance(error, int):
            raise TypeError(f"error must be an int error code, got {type(error).__name__}")
        self._code = error
        self._reason = reason if reason is not None else error_description(error)
        self._fatal = bool(fatal)
        self._retriable = bool(retriable)
        self._txn_requires_abort = bool(txn_requires_abort)

    def code(self) -> int:
        return self._code

    def name(self) -> builtins.str:
        return error_name(self._code)

    def str(self) -> builtins.str:
        return self._reason

    def fatal(self) -> bool:
        return self._fatal

    def retriable(self) -> bool:
        return self._retriable

    def txn_requires_abort(self) -> bool:
        return self._txn_requires_abort

    def __repr__(self) -> builtins.str:
        fatal = "FATAL," if self._fatal else ""
        return f'KafkaError{{{fatal}code={self.name()},val={self._code},str="{self._reason}"}}'

    __str__ = __repr__

    def __reduce__(self) -> Any:
        return (
            KafkaError,
            (self._code, self._reason, self._fatal, self._retriable, self._txn_requires_abort),
        )

    def __hash__(self) -> int:
        return hash(self._code)

    def _other(self, other: Any) -> int:
        return other._code if isinstance(other, KafkaError) else int(other)

    def __eq__(self, other: object) -> bool:
        try:
            return self._code == self._other(other)
        except (TypeError, ValueError):
            return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __lt__(self, other: Any) -> bool:
        return self._code < self._other(other)

    def __le__(self, other: Any) -> bool:
        return self._code <= self._other(other)

    def __gt__(self, other: Any) -> bool:
        return self._code > self._other(other)

    def __ge__(self, other: Any) -> bool:
        return self._code >= self._other(other)


for _name, _code in _CODES:
    setattr(KafkaError, _name, _code)


class KafkaException(Exception):
    """Raised by the facade; ``args[0]`` is the :class:`KafkaError`."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else super().__str__()


def raise_error(
    code: int,
    reason: Optional[str] = None,
    *,
    fatal: bool = False,
    retriable: bool = False,
    txn_requires_abort: bool = False,
    cause: Optional[BaseException] = None,
) -> Any:
    exc = KafkaException(KafkaError(code, reason, fatal, retriable, txn_requires_abort))
    raise exc from cause


# ------------------------------------------------------------------ cproducer -> librdkafka


class PurgedError(errors.KafkaError):
    """A record the facade's ``purge()`` (or an aborted transaction) took back; ``rdkafka_code``
    says which of librdkafka's purge codes it reports."""

    def __init__(self, rdkafka_code: int) -> None:
        super().__init__(error_description(rdkafka_code))
        self.rdkafka_code = rdkafka_code


# Java-side exception classes whose librdkafka code is not their Kafka protocol code.
_CODE_BY_CLASS: Tuple[Tuple[type, int], ...] = (
    (errors.BufferExhaustedError, QUEUE_FULL),
    (errors.KafkaTimeoutError, MSG_TIMED_OUT),
    (errors.TransactionAbortedError, PURGE_QUEUE),
    (errors.ProducerClosedError, DESTROY),
    (errors.NetworkError, TRANSPORT),
    (errors.IllegalStateError, STATE),
    (errors.InvalidPartitionError, UNKNOWN_PARTITION),
    (errors.ConfigError, INVALID_ARG),
)


def code_of(exc: BaseException) -> int:
    """librdkafka's code for a record (or call) that failed with ``exc``."""
    own = getattr(exc, "rdkafka_code", None)
    if own is not None:
        return int(own)
    if isinstance(exc, (errors.ProducerFencedError, errors.InvalidProducerEpochError)):
        return FENCED
    if isinstance(exc, errors.BrokerResponseError) and exc.errno > 0:
        return exc.errno
    for cls, cls_code in _CODE_BY_CLASS:
        if isinstance(exc, cls):
            return cls_code
    errno = getattr(exc, "errno", -1)
    return errno if isinstance(errno, int) and errno > 0 else FAIL


def from_exception(exc: BaseException) -> KafkaError:
    """The delivery-report error for a record that failed with ``exc`` (librdkafka builds these
    from the code alone: ``str()`` is the code's description). A record refused with its batch
    (KIP-467 record errors: the engine, as Java's producer, gives each record of the batch its
    own error, the batch's error its ``__cause__``) reports the batch's code, as librdkafka
    reports it for every record of the batch."""
    batch = exc.__cause__
    if isinstance(batch, errors.BrokerResponseError) and (
        not isinstance(exc, errors.BrokerResponseError)
        or isinstance(exc, errors.InvalidRecordError)
    ):
        exc = batch
    return KafkaError(code_of(exc), None, False, bool(getattr(exc, "retriable", False)))


def api_error(exc: BaseException, what: str) -> KafkaException:
    """The ``KafkaException`` a transactional or admin call raises for ``exc``, with librdkafka's
    flags: a fenced producer is fatal, a failed record makes the transaction abortable, a timeout
    is retriable."""
    rd_code = code_of(exc)
    fatal = rd_code == FENCED or isinstance(exc, errors.TransactionalIdAuthorizationFailedError)
    txn_requires_abort = isinstance(exc, errors.TransactionAbortableError)
    if txn_requires_abort:
        rd_code = INCONSISTENT
    retriable = isinstance(exc, errors.KafkaTimeoutError) or (
        bool(getattr(exc, "retriable", False)) and not fatal
    )
    if isinstance(exc, errors.KafkaTimeoutError):
        rd_code = TIMED_OUT
    detail = str(exc) or type(exc).__name__
    return KafkaException(
        KafkaError(rd_code, f"{what}: {detail}", fatal, retriable, txn_requires_abort)
    )
