"""cproducer: a Cython-compiled, high-performance Apache Kafka producer for Python.

from cproducer import KafkaProducer
producer = KafkaProducer(bootstrap_servers="localhost:9092")
producer.send("topic", b"value", key=b"key").get(timeout=10)
"""

from typing import Any

from cproducer import errors
from cproducer._version import __version__

_LAZY = {
    "KafkaProducer": ("cproducer.producer.kafka_producer", "KafkaProducer"),
    "RecordMetadata": ("cproducer.producer.internals.produce_request_result", "RecordMetadata"),
    "FutureRecordMetadata": (
        "cproducer.producer.internals.produce_request_result",
        "FutureRecordMetadata",
    ),
    "TopicPartition": ("cproducer.cluster", "TopicPartition"),
    "LocalBroker": ("cproducer.localbroker", "LocalBroker"),
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

__all__ = ["errors", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    # Imported on first use: `import cproducer` stays cheap and never needs the network stack.
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'cproducer' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value
    return value
