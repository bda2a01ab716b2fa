"""cproducer.errors against kafka-python 3.0's kafka.errors: the same names, one class per error
code, the same subclass relations (what ``except kafka.errors.X`` catches), plus the generated
file being what tools/generate_errors.py makes."""

from __future__ import annotations

import inspect
import re
import runpy
from pathlib import Path
from typing import Dict, List, Set, Type

import kafka
import kafka.errors as kp
import pytest

from cproducer import errors
from cproducer.protocol import ErrorCode

ROOT = Path(__file__).resolve().parent.parent

#: where cproducer follows the Java client instead: CORRUPT_MESSAGE is a RetriableException there
DEVIATIONS = {(n, "RetriableError") for n in ("CorruptRecordError", "CorruptRecordException")}

#: kafka-python's client-side names that a producer user may catch
CLIENT_NAMES = [
    "KafkaError",
    "RetriableError",
    "InvalidMetadataError",
    "BrokerResponseError",
    "AuthorizationError",
    "IllegalArgumentError",
    "IllegalStateError",
    "KafkaConfigurationError",
    "KafkaConnectionError",
    "KafkaProtocolError",
    "KafkaTimeoutError",
    "NodeNotReadyError",
    "TooManyInFlightRequests",
    "UnsupportedCodecError",
    "TransactionAbortedError",
    "IncompatibleBrokerVersion",
    "CorruptRecordException",
    "UnknownError",
]


def _kp_codes() -> Dict[int, Type[BaseException]]:
    return {c: cls for c, cls in kp.kafka_errors.items() if isinstance(c, int)}


def _kp_producer_names() -> Set[str]:
    """Every ``Errors.X`` kafka-python's producer package refers to."""
    found: Set[str] = set()
    for path in Path(inspect.getfile(kafka)).parent.joinpath("producer").glob("*.py"):
        found |= set(re.findall(r"\bErrors\.([A-Z]\w+)", path.read_text()))
    return found


def _shared_names() -> List[str]:
    """The kafka.errors classes cproducer has by the same name: all of the broker codes', the
    producer's and the client-side ones above."""
    names = {c.__name__ for c in _kp_codes().values()} | _kp_producer_names() | set(CLIENT_NAMES)
    return sorted(names)


def test_the_committed_files_are_what_the_generator_makes() -> None:
    generator = runpy.run_path(str(ROOT / "tools" / "generate_errors.py"))
    assert generator["main"](["--check"]) == 0


def test_every_kafka_python_code_is_the_same_named_class_with_the_same_message() -> None:
    for code, theirs in _kp_codes().items():
        ours = errors.for_code(code)
        assert ours.errno == code
        assert ours.__name__ == theirs.__name__, code
        assert getattr(errors, theirs.__name__) is ours
        assert ours.message == theirs.message, code


def test_subclass_relations_match_kafka_python() -> None:
    """For every pair of shared names X, Y: ``except Y`` catches an X here iff it does in
    kafka-python (but for DEVIATIONS)."""
    names = _shared_names()
    missing = [n for n in names if not hasattr(errors, n)]
    assert not missing
    differ = set()
    for x in names:
        for y in names:
            theirs = issubclass(getattr(kp, x), getattr(kp, y))
            if issubclass(getattr(errors, x), getattr(errors, y)) != theirs:
                differ.add((x, y))
    assert differ == DEVIATIONS


def test_retriable_and_invalid_metadata_flags_match_kafka_python() -> None:
    for name in _shared_names():
        ours, theirs = getattr(errors, name), getattr(kp, name)
        if (name, "RetriableError") in DEVIATIONS:
            assert ours.retriable and not theirs.retriable
            continue
        assert (ours.retriable, ours.invalid_metadata) == (
            theirs.retriable,
            theirs.invalid_metadata,
        ), name


def test_raised_errors_are_caught_by_kafka_python_style_excepts() -> None:
    for name in _shared_names():
        cls = getattr(errors, name)
        for base in ("KafkaError", name):
            with pytest.raises(getattr(errors, base)):
                raise cls("x")
    with pytest.raises(errors.BrokerResponseError):
        raise errors.TopicAuthorizationFailedError("t")
    with pytest.raises(errors.AuthorizationError):
        raise errors.TransactionalIdAuthorizationFailedError()


def test_one_class_per_code_under_java_names_too() -> None:
    assert errors.RecordTooLargeError is errors.MessageSizeTooLargeError
    assert errors.NotLeaderOrFollowerError is errors.NotLeaderForPartitionError
    assert errors.CorruptRecordException is errors.CorruptRecordError
    assert errors.UnknownServerError is errors.UnknownError
    assert errors.TopicAuthorizationError is errors.TopicAuthorizationFailedError
    assert errors.InvalidTopicError.errno == ErrorCode.INVALID_TOPIC_EXCEPTION
    by_code: Dict[int, type] = {}
    for name, obj in vars(errors).items():
        if isinstance(obj, type) and issubclass(obj, errors.BrokerResponseError):
            if "errno" in obj.__dict__ and obj is not errors.BrokerResponseError:
                assert by_code.setdefault(obj.errno, obj) is obj, name
    # every code of the enum has its class, and nothing else has one
    assert sorted(by_code) == sorted(int(c) for c in ErrorCode)
    for code in ErrorCode:
        assert errors.for_code(code) is by_code[code]
        assert errors.for_code(code).description


def test_cproducer_names_keep_working() -> None:
    assert errors.ConfigError is errors.KafkaConfigurationError
    assert issubclass(errors.ConfigError, ValueError)
    assert errors.NetworkError is errors.KafkaConnectionError
    assert issubclass(errors.ProducerClosedError, errors.IllegalStateError)
    assert issubclass(errors.BufferExhaustedError, errors.KafkaTimeoutError)
    assert issubclass(errors.CorruptResponseError, errors.KafkaConnectionError)
    assert issubclass(errors.CorruptResponseError, errors.KafkaProtocolError)
    assert issubclass(errors.InvalidPartitionError, ValueError)
    assert issubclass(errors.RecordTooLargeError, ValueError)
    assert errors.error_class(3) is errors.UnknownTopicOrPartitionError


def test_for_code_and_exception_for() -> None:
    assert errors.for_code(0) is errors.NoError
    assert errors.exception_for(0) is None
    err = errors.exception_for(3, "t-0")
    assert type(err) is errors.UnknownTopicOrPartitionError
    assert str(err) == "[Error 3] UnknownTopicOrPartitionError: t-0"
    assert str(errors.exception_for(6)) == "[Error 6] NotLeaderForPartitionError"
    newer = errors.for_code(31999)
    assert newer is errors.for_code(31999)  # made once
    assert issubclass(newer, errors.UnknownError) and newer.errno == 31999
    assert not newer.retriable
    assert "31999" in str(errors.exception_for(31999))
