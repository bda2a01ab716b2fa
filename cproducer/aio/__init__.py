"""aiokafka's producer API on the cproducer engine: ``from cproducer.aio import AIOKafkaProducer``.

``cproducer.aio.errors`` has aiokafka's error classes (``from aiokafka.errors import ...`` becomes
``from cproducer.aio.errors import ...``); ``RecordMetadata`` and ``TopicPartition`` are what
aiokafka's ``aiokafka.structs`` names them.
"""

from cproducer.aio import errors
from cproducer.aio.batch_builder import BatchBuilder
from cproducer.aio.partitioner import DefaultPartitioner
from cproducer.aio.producer import AIOKafkaProducer, TransactionContext
from cproducer.aio.structs import OffsetAndMetadata, RecordMetadata, TopicPartition

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
