"""aiokafka's partitioner protocol and its ``DefaultPartitioner``.

An aiokafka partitioner is called ``partitioner(key_bytes, all_partitions, available_partitions)``
(the serialized key, every partition id of the topic sorted, the ids that have a leader) and
returns one of the ids. The default hashes a key with Java's murmur2 (the same partition as the
Java client and librdkafka's ``murmur2_random``) and sends a record without a key to a random
available partition (any partition when none is available): not the engine's sticky choice.
The producer runs the default inline; a user's partitioner is called as aiokafka calls it.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from cproducer.utils.murmur2 import partition_for_key


class DefaultPartitioner:
    def __call__(self, key: Any, all_partitions: Sequence[int], available: Sequence[int]) -> int:
        if key is None:
            return random.choice(available if available else all_partitions)
        return all_partitions[partition_for_key(key, len(all_partitions))]


DEFAULT_PARTITIONER = DefaultPartitioner()
