"""EndTxn (key 26), versions 0-5 (EndTxnRequest.json / Response.json); v3+ are flexible.

request:  transactional_id string, producer_id int64, producer_epoch int16, committed bool
response: throttle_time_ms int32, error_code int16,
          v5+: producer_id int64 (default -1), producer_epoch int16 (default -1)

v5 is transactions version 2 (KIP-890 part 2): the coordinator bumps the producer's epoch as it
ends each transaction (a new producer id, epoch 0, when the epoch would overflow) and answers the
id and epoch the producer uses from then on. A producer on transactions version 1 asks with v4 at
most (``LAST_VERSION_BEFORE_TRANSACTION_V2``), as Java's does.
"""

from __future__ import annotations

from dataclasses import dataclass

from cproducer.protocol.primitives import Reader, Writer
from cproducer.protocol.txn_request import ProducerTxnRequest

#: the newest EndTxn a producer on transactions version 1 sends (Java's
#: EndTxnRequest.LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2)
LAST_VERSION_BEFORE_TRANSACTION_V2 = 4
FIRST_TRANSACTION_V2_VERSION = 5


@dataclass
class EndTxnResponse:
    throttle_time_ms: int
    error_code: int
    #: v5+: the producer id and epoch after the coordinator's bump; -1 before v5 (no bump)
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass
class EndTxnRequest(ProducerTxnRequest):
    API_KEY = 26
    MAX_VERSION = 5
    FIRST_FLEXIBLE_VERSION = 3
    transactional_id: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    committed: bool = True

    def write_fields(self, w: Writer, version: int, flex: bool) -> None:
        self.write_producer(w, flex)
        w.boolean(self.committed)

    @classmethod
    def decode_response(cls, version: int, data: memoryview) -> EndTxnResponse:
        r = Reader(data)
        out = EndTxnResponse(r.int32(), r.int16())
        if version >= FIRST_TRANSACTION_V2_VERSION:
            out.producer_id, out.producer_epoch = r.int64(), r.int16()
        if cls.flexible(version):
            r.tagged_fields()
        return out
