"""confluent-kafka's producer API on cproducer: change the import, keep the code.

    from cproducer.compat.confluent import Producer, KafkaError, KafkaException

``Producer`` takes librdkafka's configuration and keeps librdkafka's defaults, partitioners
(a key lands on the partition librdkafka would choose), error codes and delivery-report model.
"""

from cproducer.compat.confluent.cluster_metadata import (
    BrokerMetadata,
    ClusterMetadata,
    PartitionMetadata,
    TopicMetadata,
)
from cproducer.compat.confluent.error import KafkaError, KafkaException
from cproducer.compat.confluent.message import Message
from cproducer.compat.confluent.producer import Producer
from cproducer.compat.confluent.topic_partition import TopicPartition

TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2
OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_STORED = -1000
OFFSET_INVALID = -1001

__all__ = [
    "BrokerMetadata",
    "ClusterMetadata",
    "KafkaError",
    "KafkaException",
    "Message",
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "PartitionMetadata",
    "Producer",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "TIMESTAMP_NOT_AVAILABLE",
    "TopicMetadata",
    "TopicPartition",
]
