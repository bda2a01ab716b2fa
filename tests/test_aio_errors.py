"""cproducer.aio.errors has aiokafka's error classes: the same names, bases, codes and flags, so
``except aiokafka.errors.X`` clauses keep working with the import switched; and the engine's
errors become the class aiokafka raises in the same situation."""

from __future__ import annotations

import inspect

import aiokafka.errors as peer
import pytest

from cproducer import errors as engine
from cproducer.aio import errors as ours


def _names_of_classes(module: object) -> dict:
    return {
        name: obj
        for name, obj in vars(module).items()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and not name.startswith("_")
        and obj.__module__ == module.__name__  # type: ignore[attr-defined]
    }


def test_every_aiokafka_error_name_is_there_with_the_same_tree() -> None:
    theirs = _names_of_classes(peer)
    assert len(theirs) > 100
    for name, cls in theirs.items():
        mine = getattr(ours, name, None)
        assert mine is not None, f"missing {name}"
        # the chain of base names up to the builtins
        assert [c.__name__ for c in mine.__mro__] == [c.__name__ for c in cls.__mro__], name
        for attr in ("errno", "message", "retriable", "invalid_metadata"):
            assert getattr(mine, attr, None) == getattr(cls, attr, None), (name, attr)
        # aiokafka's second names (InvalidMessageError, NotCoordinatorError, ...) name the same
        # class as the first
        assert (mine.__name__ == name) == (cls.__name__ == name), name


def test_all_lists_what_aiokafka_lists() -> None:
    assert set(peer.__all__) <= set(ours.__all__)


@pytest.mark.parametrize("code", range(-1, 120))
def test_for_code(code: int) -> None:
    assert ours.for_code(code).__name__ == peer.for_code(code).__name__


@pytest.mark.parametrize("module", [ours, peer], ids=["cproducer.aio", "aiokafka"])
def test_str_of_errors(module: object) -> None:
    assert str(module.KafkaTimeoutError()) == "KafkaTimeoutError"  # type: ignore[attr-defined]
    assert str(module.KafkaError("boom")) == "KafkaError: boom"  # type: ignore[attr-defined]
    err = module.MessageSizeTooLargeError("too big")  # type: ignore[attr-defined]
    assert str(err) == "[Error 10] MessageSizeTooLargeError: too big"
    assert "transactional_id" in str(module.ProducerFenced())  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "engine_error, expected",
    [
        (engine.KafkaTimeoutError("no room"), ours.KafkaTimeoutError),
        (engine.BufferExhaustedError("no room"), ours.KafkaTimeoutError),
        (engine.ProducerClosedError("closed"), ours.ProducerClosed),
        (engine.RecordTooLargeError("big"), ours.MessageSizeTooLargeError),
        (engine.ProducerFencedError("fenced"), ours.ProducerFenced),
        (engine.InvalidProducerEpochError("old epoch"), ours.ProducerFenced),
        (engine.NotEnoughReplicasError("isr"), ours.NotEnoughReplicasError),
        (engine.NotLeaderForPartitionError(""), ours.NotLeaderForPartitionError),
        (engine.TopicAuthorizationFailedError("t"), ours.TopicAuthorizationFailedError),
        (engine.NetworkError("cut"), ours.KafkaConnectionError),
        (engine.IllegalStateError("state"), ours.IllegalStateError),
        (engine.TransactionAbortedError("aborted"), ours.KafkaError),
        (engine.InvalidRecordError("bad record"), ours.UnknownError),  # a code aiokafka lacks
        (engine.SerializationError("not bytes"), TypeError),
    ],
)
def test_translate(engine_error: BaseException, expected: type) -> None:
    out = ours.translate(engine_error)
    assert type(out) is expected
    assert out.__cause__ is engine_error
    if isinstance(out, ours.BrokerResponseError):
        assert out.errno == expected.errno  # type: ignore[attr-defined]
    assert ours.translate(engine_error) is not out  # one exception per failed record


def test_translate_keeps_other_exceptions() -> None:
    err = ValueError("a serializer's own error")
    assert ours.translate(err) is err
