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
from cproducer.compat.confluent._codes_generated import CODES

#: librdkafka's error codes (rdkafka.h ``rd_kafka_resp_err_t``), name without the
#: ``RD_KAFKA_RESP_ERR_`` prefix; the broker codes come from the table of the protocol's error
#: codes. Where librdkafka has two names for one code, the first is the one ``name()`` returns.
_CODES: Tuple[Tuple[str, int], ...] = CODES

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
