"""EndTxn (key 26), versions 0-4 (EndTxnRequest.json / Response.json); v3+ are flexible.

request:  transactional_id string, producer_id int64, producer_epoch int16, committed bool
response: throttle_time_ms int32, error_code int16
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List

from cproducer.protocol.primitives import Writer, read_throttle_and_error


@dataclass
class EndTxnResponse:
    throttle_time_ms: int
    error_code: int


@dataclass
class EndTxnRequest:
    API_KEY = 26
    MIN_VERSION = 0
    MAX_VERSION = 4
    FIRST_FLEXIBLE_VERSION = 3
    transactional_id: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    committed: bool = True

    def expect_response(self) -> bool:
        return True

    def encode_body(self, version: int) -> List[Any]:
        flex = version >= 3
        w = Writer()
        w.string(self.transactional_id, compact=flex)
        w.int64(self.producer_id).int16(self.producer_epoch).boolean(self.committed)
        if flex:
            w.tagged_fields()
        return [w.buf]

    @staticmethod
    def decode_response(version: int, data: memoryview) -> EndTxnResponse:
        return EndTxnResponse(*read_throttle_and_error(data, version >= 3))
