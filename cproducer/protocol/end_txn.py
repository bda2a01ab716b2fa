"""EndTxn (key 26), versions 0-4 (EndTxnRequest.json / Response.json); v3+ are flexible.

request:  transactional_id string, producer_id int64, producer_epoch int16, committed bool
response: throttle_time_ms int32, error_code int16
"""

from __future__ import annotations

from dataclasses import dataclass

from cproducer.protocol.primitives import Writer, read_throttle_and_error
from cproducer.protocol.txn_request import ProducerTxnRequest


@dataclass
class EndTxnResponse:
    throttle_time_ms: int
    error_code: int


@dataclass
class EndTxnRequest(ProducerTxnRequest):
    API_KEY = 26
    MAX_VERSION = 4
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
        return EndTxnResponse(*read_throttle_and_error(data, cls.flexible(version)))
