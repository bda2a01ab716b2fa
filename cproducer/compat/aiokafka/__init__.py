"""aiokafka's producer API on the cproducer engine: ``from cproducer.aio import AIOKafkaProducer``.

``cproducer.aio.errors`` has aiokafka's error classes (``from aiokafka.errors import ...`` becomes
``from cproducer.aio.errors import ...``); ``RecordMetadata`` and ``TopicPartition`` are what
aiokafka's ``aiokafka.structs`` names them.
"""

from typing import NoReturn

from cproducer.compat.aiokafka import errors
from cproducer.compat.aiokafka.batch_builder import BatchBuilder
from cproducer.compat.aiokafka.errors import IllegalOperation
from cproducer.compat.aiokafka.partitioner import DefaultPartitioner
from cproducer.compat.aiokafka.producer import AIOKafkaProducer, TransactionContext
from cproducer.compat.aiokafka.structs import OffsetAndMetadata, RecordMetadata, TopicPartition

__all__ = [
    "AIOKafkaProducer",
    "BatchBuilder",
    "DefaultPartitioner",
    "IllegalOperation",
    "OffsetAndMetadata",
    "RecordMetadata",
    "TopicPartition",
    "TransactionContext",
    "errors",
]

# aiokafka's names for what is not a producer: refused with where to find them
_NOT_A_PRODUCER = {
    "AIOKafkaConsumer": "consume with aiokafka.AIOKafkaConsumer",
    "ConsumerRebalanceListener": "consume with aiokafka.AIOKafkaConsumer",
    "ConsumerRecord": "consume with aiokafka.AIOKafkaConsumer",
    "ConsumerStoppedError": "consume with aiokafka.AIOKafkaConsumer",
    "OffsetAndTimestamp": "consume with aiokafka.AIOKafkaConsumer",
    "AIOKafkaClient": "a topic's partitions: await producer.partitions_for(topic); the "
    "cluster's metadata: aiokafka.admin.AIOKafkaAdminClient",
}


def __getattr__(name: str) -> NoReturn:
    if name in _NOT_A_PRODUCER:
        raise AttributeError(
            f"cproducer.aio has aiokafka's producer only, not {name}: {_NOT_A_PRODUCER[name]}"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
