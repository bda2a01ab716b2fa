"""cproducer: a Cython-compiled, high-performance Apache Kafka producer for Python.

from cproducer import KafkaProducer
producer = KafkaProducer(bootstrap_servers="localhost:9092")
producer.send("topic", b"value", key=b"key").get(timeout=10)
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any, Optional, Sequence

from cproducer import errors
from cproducer._version import __version__

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name loads on first use
    from cproducer.cluster import TopicPartition
    from cproducer.producer.internals.produce_request_result import (
        FutureRecordMetadata,
        RecordMetadata,
    )
    from cproducer.producer.internals.transaction_manager import ConsumerGroupMetadata
    from cproducer.producer.kafka_producer import KafkaProducer
    from cproducer.producer.serializers import DefaultSerializer, JsonSerializer, Serializer
    from cproducer.structs import OffsetAndMetadata
    from cproducer.tools.localbroker import LocalBroker

_LAZY = {
    "KafkaProducer": ("cproducer.producer.kafka_producer", "KafkaProducer"),
    "RecordMetadata": ("cproducer.producer.internals.produce_request_result", "RecordMetadata"),
    "FutureRecordMetadata": (
        "cproducer.producer.internals.produce_request_result",
        "FutureRecordMetadata",
    ),
    "TopicPartition": ("cproducer.cluster", "TopicPartition"),
    "LocalBroker": ("cproducer.tools.localbroker", "LocalBroker"),
    "ConsumerGroupMetadata": (
        "cproducer.producer.internals.transaction_manager",
        "ConsumerGroupMetadata",
    ),
    # kafka-python's names, so that switching its import is all a program needs
    "OffsetAndMetadata": ("cproducer.structs", "OffsetAndMetadata"),
    "Serializer": ("cproducer.producer.serializers", "Serializer"),
    "DefaultSerializer": ("cproducer.producer.serializers", "DefaultSerializer"),
    "JsonSerializer": ("cproducer.producer.serializers", "JsonSerializer"),
}

__all__ = [
    "ConsumerGroupMetadata",
    "DefaultSerializer",
    "FutureRecordMetadata",
    "JsonSerializer",
    "KafkaProducer",
    "LocalBroker",
    "OffsetAndMetadata",
    "RecordMetadata",
    "Serializer",
    "TopicPartition",
    "__version__",
    "errors",
]


def __getattr__(name: str) -> Any:
    # Imported on first use: `import cproducer` stays cheap and never needs the network stack.
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'cproducer' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value
    return value


#: Module paths of earlier layouts -> where the module lives now. Importing an old path gives the
#: module itself (the same object, so isinstance and monkeypatching agree) with a
#: DeprecationWarning naming the new path; the changelog lists them.
MOVED_MODULES = {
    "cproducer.batch_future": "cproducer.producer.batch_future",
    "cproducer.columns": "cproducer.producer.columns",
    "cproducer.compression": "cproducer.record.compression",
    "cproducer.config": "cproducer.producer.config",
    "cproducer.interceptors": "cproducer.producer.interceptors",
    "cproducer.metadata": "cproducer.producer.internals.producer_metadata",
    "cproducer.partitioners": "cproducer.producer.partitioners",
    "cproducer.sender": "cproducer.producer.internals.sender",
    "cproducer.serializers": "cproducer.producer.serializers",
    "cproducer.tls": "cproducer.network.tls",
    "cproducer.transaction_manager": "cproducer.producer.internals.transaction_manager",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old module path to the module at its new home."""

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED_MODULES[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}: import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        pass  # the module at the new path is already executed


sys.meta_path.append(_MovedModules())
