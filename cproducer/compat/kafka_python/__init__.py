"""kafka-python's producer API: ``from kafka import KafkaProducer`` becomes
``from cproducer.compat.kafka_python import KafkaProducer`` (or ``from cproducer import ...``).

The engine speaks kafka-python's API itself, so this home re-exports it: the producer, its error
module (kafka-python's class names, Java's as aliases), its structs and serializers.
"""

from cproducer.cluster import TopicPartition
from cproducer.compat.kafka_python import errors
from cproducer.producer.internals.produce_request_result import (
    FutureRecordMetadata,
    RecordMetadata,
)
from cproducer.producer.kafka_producer import KafkaProducer
from cproducer.producer.serializers import DefaultSerializer, JsonSerializer, Serializer
from cproducer.structs import OffsetAndMetadata

__all__ = [
    "DefaultSerializer",
    "FutureRecordMetadata",
    "JsonSerializer",
    "KafkaProducer",
    "OffsetAndMetadata",
    "RecordMetadata",
    "Serializer",
    "TopicPartition",
    "errors",
]
