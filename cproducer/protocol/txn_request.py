"""What the requests of a transactional producer share (InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn, FindCoordinator).

Each expects a response. From ``FIRST_FLEXIBLE_VERSION`` on a version is flexible: compact
strings and arrays, and a tagged-fields section after each struct; ``encode_body`` adds the one
that ends the body, so a request writes only its own fields (``write_fields``).
"""

from __future__ import annotations

from typing import Any, ClassVar, List

from cproducer.protocol.primitives import Writer


class TxnRequest:
    API_KEY: ClassVar[int]
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int]
    FIRST_FLEXIBLE_VERSION: ClassVar[int]

    @classmethod
    def flexible(cls, version: int) -> bool:
        return version >= cls.FIRST_FLEXIBLE_VERSION

    def expect_response(self) -> bool:
        return True

    def encode_body(self, version: int) -> List[Any]:
        flex = self.flexible(version)
        w = Writer()
        self.write_fields(w, version, flex)
        if flex:
            w.tagged_fields()
        return [w.buf]

    def write_fields(self, w: Writer, version: int, flex: bool) -> None:
        raise NotImplementedError


class ProducerTxnRequest(TxnRequest):
    """A request that names the producer's transaction: ``transactional_id string,
    producer_id int64, producer_epoch int16`` first."""

    transactional_id: str
    producer_id: int
    producer_epoch: int

    def write_producer(self, w: Writer, flex: bool) -> None:
        w.string(self.transactional_id, compact=flex)
        w.int64(self.producer_id).int16(self.producer_epoch)
