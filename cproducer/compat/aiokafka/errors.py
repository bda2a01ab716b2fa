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

from typing import Dict, Optional, Type

from cproducer import errors as engine_errors

__all__ = [  # noqa: RUF022 - grouped as aiokafka groups them; the broker codes' classes
    # are added below, from the generated module
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


# aiokafka's class of each broker error code, generated from the table of the protocol's error
# codes; the import stands here, after the base they derive from
from cproducer.compat.aiokafka import _errors_generated  # noqa: E402
from cproducer.compat.aiokafka._errors_generated import *  # noqa: E402, F403
from cproducer.compat.aiokafka._errors_generated import (  # noqa: E402
    InvalidTopicError,
    MessageSizeTooLargeError,
    UnknownError,
)

__all__ += _errors_generated.__all__

#: protocol error code -> class (the codes aiokafka knows)
kafka_errors: Dict[int, Type[BrokerResponseError]] = dict(_errors_generated.CLASS_BY_CODE)


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
_FENCED_CODES = frozenset(
    (engine_errors.ProducerFencedError.errno, engine_errors.InvalidProducerEpochError.errno)
)


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
