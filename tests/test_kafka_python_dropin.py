"""``kafka.errors`` and ``kafka.KafkaProducer`` as a program written for kafka-python 3.0.12 uses
them, with its import switched to cproducer: every error name it may catch, with kafka-python's
bases and attributes, and every documented method and parameter of the producer.

Each test is parametrized over kafka-python itself and cproducer's homes of the same API: the
peer passing proves the test."""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType
from typing import Dict, List, Set, Tuple, Type

import kafka
import kafka.errors as kp
import pytest

ERROR_MODULES = ["kafka.errors", "cproducer.errors", "cproducer.compat.kafka_python.errors"]
PRODUCER_MODULES = ["kafka", "cproducer", "cproducer.compat.kafka_python"]

#: where cproducer follows the Java client instead: CORRUPT_MESSAGE is a RetriableException there
#: (the batch is retried), so ``except RetriableError`` catches it too
DEVIATIONS = {
    ("CorruptRecordError", "RetriableError"),
    ("CorruptRecordException", "RetriableError"),
}


def _errors(name: str) -> ModuleType:
    module = importlib.import_module(name)
    return module if name.endswith(".errors") else module.errors  # type: ignore[no-any-return]


def _classes(module: ModuleType) -> Dict[str, Type[BaseException]]:
    return {
        n: v
        for n, v in vars(module).items()
        if isinstance(v, type) and issubclass(v, BaseException) and not n.startswith("_")
    }


KP_CLASSES = _classes(kp)


@pytest.mark.parametrize("module_name", ERROR_MODULES)
def test_every_kafka_python_error_name_is_there(module_name: str) -> None:
    """All of kafka.errors' classes (not only the broker codes'), by the same names, and its
    ``for_code``."""
    module = importlib.import_module(module_name)
    ours = _classes(module)
    assert sorted(set(KP_CLASSES) - set(ours)) == []
    assert callable(module.for_code)
    for name, theirs in KP_CLASSES.items():
        # two names of one class there are two names of one class here
        for other, cls in KP_CLASSES.items():
            assert (ours[name] is ours[other]) == (theirs is cls), (name, other)


@pytest.mark.parametrize("module_name", ERROR_MODULES)
def test_class_relations_and_attributes_are_kafka_pythons(module_name: str) -> None:
    """For every pair X, Y of kafka.errors' classes, ``except Y`` catches an X here iff it does in
    kafka-python (but for DEVIATIONS); each class has its ``errno``, ``message``, ``retriable``
    and ``invalid_metadata``."""
    ours = _classes(importlib.import_module(module_name))
    differ: Set[Tuple[str, str]] = set()
    for x, kx in KP_CLASSES.items():
        for y, ky in KP_CLASSES.items():
            if issubclass(ours[x], ours[y]) != issubclass(kx, ky):
                differ.add((x, y))
    assert differ <= DEVIATIONS
    abstract = {"BrokerResponseError", "AuthorizationError"}  # errno None there, -1 here
    for name, theirs in KP_CLASSES.items():
        cls = ours[name]
        assert issubclass(cls, ours["KafkaError"]) == issubclass(theirs, kp.KafkaError)
        if (name, "RetriableError") not in DEVIATIONS:
            assert (cls.retriable, cls.invalid_metadata) == (  # type: ignore[attr-defined]
                theirs.retriable,  # type: ignore[attr-defined]
                theirs.invalid_metadata,  # type: ignore[attr-defined]
            ), name
        if name in abstract:
            continue
        for attr in ("errno", "message"):
            assert getattr(cls, attr, None) == getattr(theirs, attr, None), (name, attr)


@pytest.mark.parametrize("module_name", ERROR_MODULES)
def test_kafka_pythons_client_errors_behave_as_there(module_name: str) -> None:
    """The client-side classes' constructors and messages, and catching by base."""
    errors = importlib.import_module(module_name)
    truncated = errors.LogTruncationError({"tp": None})
    assert truncated.divergent_offsets == {"tp": None}
    assert "Detected truncated partitions" in str(truncated)
    assert "rebalanced" in str(errors.CommitFailedError())
    assert str(errors.CommitFailedError("own")).endswith("own")
    assert errors.TransactionAbortedError.message == "Failing batch since transaction was aborted"
    caught: List[str] = []
    for cls, base in (
        (errors.StaleMetadata, errors.InvalidMetadataError),
        (errors.Cancelled, errors.RetriableError),
        (errors.MetadataEmptyBrokerList, errors.RetriableError),
        (errors.CorrelationIdError, errors.KafkaProtocolError),
        (errors.InvalidReceiveError, errors.KafkaProtocolError),
        (errors.NoOffsetForPartitionError, errors.KafkaError),
        (errors.UnknownBrokerIdError, errors.KafkaError),
        (errors.QuotaViolationError, errors.KafkaError),
        (errors.UnrecognizedBrokerVersion, errors.KafkaError),
    ):
        try:
            raise cls("x")
        except base as exc:
            caught.append(type(exc).__name__)
    assert len(caught) == 9
    newer = errors.for_code(31999)
    assert issubclass(newer, errors.UnknownError) and newer.errno == 31999
    assert errors.for_code(3) is errors.UnknownTopicOrPartitionError
    assert str(errors.UnknownTopicOrPartitionError("t")).startswith("[Error 3] ")


# ------------------------------------------------------------------ KafkaProducer's methods


#: kafka-python's documented public methods of KafkaProducer, with their parameters
DOCUMENTED_METHODS = {
    "send": ["topic", "value", "key", "headers", "partition", "timestamp_ms"],
    "flush": ["timeout"],
    "close": ["timeout"],
    "metrics": ["raw"],
    "partitions_for": ["topic"],
    "bootstrap_connected": [],
    "init_transactions": [],
    "begin_transaction": [],
    "commit_transaction": [],
    "abort_transaction": [],
    "send_offsets_to_transaction": ["offsets", "group_metadata"],
}
FUTURE_METHODS = {
    "get": ["timeout"],
    "add_callback": ["f"],
    "add_errback": ["f"],
    "add_both": ["f"],
    "succeeded": [],
    "failed": [],
    "retriable": [],
}
FUTURE_ATTRIBUTES = ["is_done", "value", "exception"]


def _params(func: object) -> List[str]:
    return [
        p.name
        for p in inspect.signature(func).parameters.values()  # type: ignore[arg-type]
        if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)
    ]


def test_the_documented_methods_are_kafka_pythons() -> None:
    """The lists below are kafka-python's (they fail here when kafka-python changes them)."""
    for name, params in DOCUMENTED_METHODS.items():
        assert _params(getattr(kafka.KafkaProducer, name))[: len(params)] == params, name
    from kafka.producer.future import FutureRecordMetadata

    for name, params in FUTURE_METHODS.items():
        assert _params(getattr(FutureRecordMetadata, name))[: len(params)] == params, name


@pytest.mark.parametrize("module_name", PRODUCER_MODULES)
def test_every_documented_method_takes_kafka_pythons_parameters(module_name: str) -> None:
    """Each method by name, each parameter in kafka-python's position (a call by position or by
    keyword works the same); the futures' methods and attributes; RecordMetadata's fields."""
    module = importlib.import_module(module_name)
    producer = module.KafkaProducer
    for name, params in DOCUMENTED_METHODS.items():
        ours = _params(getattr(producer, name))
        assert ours[: len(params)] == params, (name, ours)
    assert hasattr(producer, "__enter__") and hasattr(producer, "__exit__")
    home = importlib.import_module("kafka.producer.future") if module_name == "kafka" else module
    future = home.FutureRecordMetadata
    for name, params in FUTURE_METHODS.items():
        # the callback's own name may differ (f / fn): it is passed by position
        assert len(_params(getattr(future, name))) >= len(params), name
    for name in FUTURE_ATTRIBUTES:
        assert hasattr(future, name), name
    from kafka.producer.future import RecordMetadata

    assert home.RecordMetadata._fields == RecordMetadata._fields


def test_the_partitioners_cluster_view_refuses_to_change_the_metadata() -> None:
    """kafka-python's ClusterMetadata lets a partitioner ask for a refresh or add a topic; the
    view cproducer hands over is a snapshot, so those calls raise AttributeError saying what the
    producer does instead (a misspelt name gets Python's usual message)."""
    from cproducer.cluster import Cluster, Node, PartitionInfo
    from cproducer.producer.partitioners import ClusterMetadataView

    node = Node(1, "h", 9092)
    view = ClusterMetadataView(Cluster([node], [PartitionInfo("t", 0, node, (node,), (node,))]))
    assert view.partitions_for_topic("t") == {0}
    for name in ("request_update", "add_topic", "set_topics", "update_metadata"):
        with pytest.raises(AttributeError, match="read-only.*refreshes its metadata itself"):
            getattr(view, name)
    with pytest.raises(AttributeError, match="has no attribute 'partitions_for_topik'"):
        view.partitions_for_topik  # noqa: B018
