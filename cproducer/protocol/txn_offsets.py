"""The two requests of ``send_offsets_to_transaction``; v3+ of both are flexible.

AddOffsetsToTxn (key 25), versions 0-4, to the transaction coordinator:
    request:  transactional_id string, producer_id int64, producer_epoch int16, group_id string
    response: throttle_time_ms int32, error_code int16

TxnOffsetCommit (key 28), versions 0-5, to the group coordinator:
    request:  transactional_id string, group_id string, producer_id int64, producer_epoch int16,
              [v3+: generation_id int32, member_id string, group_instance_id nullable string],
              topics [name string, partitions [partition_index int32, committed_offset int64,
                       v2+: committed_leader_epoch int32, committed_metadata nullable string]]
    response: throttle_time_ms int32,
              topics [name string, [partition_index int32, error_code int16]]

TxnOffsetCommit v5 is v4's layout; asking with it means transactions version 2 (KIP-890 part 2):
the group coordinator adds the group's offsets partition to the transaction itself, so no
AddOffsetsToTxn goes before it. A producer on transactions version 1 sends AddOffsetsToTxn first
and TxnOffsetCommit v4 at most (``LAST_TXN_OFFSET_COMMIT_BEFORE_TRANSACTION_V2``), as Java's
does. (v6 names topics by id: we stop at 5.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from cproducer.protocol.primitives import (
    Writer,
    read_throttle_and_error,
    read_throttle_and_partition_errors,
)
from cproducer.protocol.txn_request import ProducerTxnRequest, TxnRequest

#: the newest TxnOffsetCommit a producer on transactions version 1 sends (Java's
#: TxnOffsetCommitRequest.LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2)
LAST_TXN_OFFSET_COMMIT_BEFORE_TRANSACTION_V2 = 4


@dataclass
class AddOffsetsToTxnResponse:
    throttle_time_ms: int
    error_code: int


@dataclass
class AddOffsetsToTxnRequest(ProducerTxnRequest):
    API_KEY = 25
    MAX_VERSION = 4
    FIRST_FLEXIBLE_VERSION = 3
    transactional_id: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    group_id: str = ""

    def expect_response(self) -> bool:
        return True

    def write_fields(self, w: Writer, version: int, flex: bool) -> None:
        self.write_producer(w, flex)
        w.string(self.group_id, compact=flex)

    @classmethod
    def decode_response(cls, version: int, data: memoryview) -> AddOffsetsToTxnResponse:
        return AddOffsetsToTxnResponse(*read_throttle_and_error(data, cls.flexible(version)))


@dataclass
class TxnOffsetCommitResponse:
    throttle_time_ms: int
    #: (topic, partition) -> error code
    errors: Dict[Tuple[str, int], int]


@dataclass
class TxnOffsetCommitRequest(TxnRequest):
    API_KEY = 28
    MAX_VERSION = 5
    FIRST_FLEXIBLE_VERSION = 3
    transactional_id: str = ""
    group_id: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: Optional[str] = None
    #: topic -> [(partition, offset, leader_epoch, metadata)]
    topics: Dict[str, List[Tuple[int, int, int, Optional[str]]]] = field(default_factory=dict)

    def expect_response(self) -> bool:
        return True

    def write_fields(self, w: Writer, version: int, flex: bool) -> None:
        w.string(self.transactional_id, compact=flex)
        w.string(self.group_id, compact=flex)
        w.int64(self.producer_id).int16(self.producer_epoch)
        if version >= 3:  # the group's member fields came with the first flexible version
            w.int32(self.generation_id)
            w.string(self.member_id, compact=True)
            w.string(self.group_instance_id, compact=True, nullable=True)
        w.array_length(len(self.topics), flex)
        for topic, partitions in self.topics.items():
            w.string(topic, compact=flex)
            w.array_length(len(partitions), flex)
            for index, offset, leader_epoch, metadata in partitions:
                w.int32(index).int64(offset)
                if version >= 2:
                    w.int32(leader_epoch)
                w.string(metadata, compact=flex, nullable=True)
                if flex:
                    w.tagged_fields()
            if flex:
                w.tagged_fields()

    @classmethod
    def decode_response(cls, version: int, data: memoryview) -> TxnOffsetCommitResponse:
        errors = read_throttle_and_partition_errors(data, cls.flexible(version))
        return TxnOffsetCommitResponse(*errors)
