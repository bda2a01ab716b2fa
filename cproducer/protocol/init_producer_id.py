"""InitProducerId (key 22), versions 0-5 (InitProducerIdRequest.json / Response.json).

v5 is v4 for a client that knows TRANSACTION_ABORTABLE (KIP-890); v6 (two-phase commit,
KIP-939) is not spoken."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from cproducer.protocol.primitives import Reader, Writer
from cproducer.protocol.txn_request import TxnRequest


@dataclass
class InitProducerIdResponse:
    throttle_time_ms: int
    error_code: int
    producer_id: int
    producer_epoch: int


@dataclass
class InitProducerIdRequest(TxnRequest):
    API_KEY = 22
    MAX_VERSION = 5
    FIRST_FLEXIBLE_VERSION = 2
    transactional_id: Optional[str] = None
    transaction_timeout_ms: int = 60000
    producer_id: int = -1
    producer_epoch: int = -1

    def write_fields(self, w: Writer, version: int, flex: bool) -> None:
        w.string(self.transactional_id, compact=flex, nullable=True)
        w.int32(self.transaction_timeout_ms)
        if version >= 3:  # KIP-360: the current id and epoch, to bump the epoch
            w.int64(self.producer_id).int16(self.producer_epoch)

    @classmethod
    def decode_response(cls, version: int, data: memoryview) -> InitProducerIdResponse:
        r = Reader(data)
        out = InitProducerIdResponse(r.int32(), r.int16(), r.int64(), r.int16())
        if cls.flexible(version):
            r.tagged_fields()
        return out
