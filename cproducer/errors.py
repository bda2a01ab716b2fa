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
are in ``cproducer._error_classes``, which ``tools/generate_errors.py`` writes (with
``cproducer.protocol.ErrorCode``, the codes by Java's names) and this module re-exports; edit the
table there.
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

    def __init__(self, *args: Any) -> None:
        # kafka-python's message when none is given
        super().__init__(
            *(
                args
                or (
                    "Commit cannot be completed since the group has already rebalanced and "
                    "assigned the partitions to another member.",
                )
            )
        )


class TransactionAbortedError(KafkaError):
    """The record was not sent: its transaction was aborted before it could be (Java's
    TransactionAbortedException)."""

    #: kafka-python's class attribute (the batch's error message in Java too)
    message: str = "Failing batch since transaction was aborted"


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


# kafka-python's other client-side errors: its consumer's and its network layer's. The producer
# raises none of them, but programs written for kafka-python catch them by name, so they are
# here with kafka-python's bases (``except`` clauses naming them must resolve).


class Cancelled(RetriableError):
    """An operation was cancelled before it finished (kafka-python's)."""


class CorrelationIdError(RetriableError, KafkaProtocolError):
    """An answer's correlation id is not the request's (kafka-python's; cproducer closes the
    connection with ``CorruptResponseError``)."""


class InvalidReceiveError(KafkaProtocolError):
    """Bytes received could not be read as a response (kafka-python's; cproducer raises
    ``CorruptResponseError``)."""


class MetadataEmptyBrokerList(RetriableError):
    """A metadata answer listed no brokers (kafka-python's)."""


class NoOffsetForPartitionError(KafkaError):
    """A consumer has no position for a partition and no reset policy (kafka-python's)."""


class LogTruncationError(KafkaError):
    """A consumer read past the end of a truncated log (kafka-python's, KIP-320);
    ``divergent_offsets`` maps each partition to where it may resume (None: unknown)."""

    def __init__(self, divergent_offsets: Any, *args: Any) -> None:
        self.divergent_offsets = divergent_offsets
        super().__init__(*(args or (f"Detected truncated partitions: {divergent_offsets}",)))


class UnknownBrokerIdError(KafkaError):
    """A node id that is not in the metadata (kafka-python's)."""


class QuotaViolationError(KafkaError):
    """A client quota was violated (kafka-python's)."""


class StaleMetadata(InvalidMetadataError):
    """The metadata is older than an operation needs (kafka-python's)."""


class UnrecognizedBrokerVersion(KafkaError):
    """The broker's version could not be told from its answers (kafka-python's)."""


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


# the broker error classes, generated from one table of the protocol's error codes; the import
# stands here, after the bases they derive from
from cproducer._error_classes import *  # noqa: E402, F403
from cproducer._error_classes import CLASS_BY_CODE as _GENERATED_BY_CODE  # noqa: E402
from cproducer._error_classes import NoError, UnknownError, UnsupportedVersionError  # noqa: E402


class IncompatibleBrokerVersion(UnsupportedVersionError):
    """The broker does not speak a version of an API that the operation needs."""


_CLASS_BY_CODE: Dict[int, Type[BrokerResponseError]] = dict(_GENERATED_BY_CODE)


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
