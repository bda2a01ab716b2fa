"""aiokafka's producer API on the cproducer engine: ``from cproducer.aio import AIOKafkaProducer``.

``cproducer.aio.errors`` has aiokafka's error classes (``from aiokafka.errors import ...`` becomes
``from cproducer.aio.errors import ...``); ``RecordMetadata`` and ``TopicPartition`` are what
aiokafka's ``aiokafka.structs`` names them.
"""

from cproducer.compat.aiokafka import errors
from cproducer.compat.aiokafka.batch_builder import BatchBuilder
from cproducer.compat.aiokafka.partitioner import DefaultPartitioner
from cproducer.compat.aiokafka.producer import AIOKafkaProducer, TransactionContext
from cproducer.compat.aiokafka.structs import OffsetAndMetadata, RecordMetadata, TopicPartition

__all__ = [
    "AIOKafkaProducer",
    "BatchBuilder",
    "DefaultPartitioner",
    "OffsetAndMetadata",
    "RecordMetadata",
    "TopicPartition",
    "TransactionContext",
    "errors",
]
