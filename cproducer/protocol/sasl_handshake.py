"""SaslHandshake (key 17), versions 0-1 (SaslHandshakeRequest.json / Response.json); never
flexible.

request:  mechanism string
response: error_code int16, mechanisms [string] (the mechanisms the broker has enabled)

v0 and v1 carry the same fields. What differs is what follows: after a v1 handshake the SASL
tokens travel in SaslAuthenticate requests; after a v0 one they go as bare size-prefixed frames
with no Kafka header (brokers before 1.0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List

from cproducer.protocol.primitives import Reader, Writer


@dataclass
class SaslHandshakeResponse:
    error_code: int
    mechanisms: List[str] = field(default_factory=list)


@dataclass
class SaslHandshakeRequest:
    API_KEY = 17
    MIN_VERSION = 0
    MAX_VERSION = 1
    FIRST_FLEXIBLE_VERSION = 2**15  # none
    mechanism: str = ""

    def expect_response(self) -> bool:
        return True

    def encode_body(self, version: int) -> List[Any]:
        return [Writer().string(self.mechanism).buf]

    @staticmethod
    def decode_response(version: int, data: memoryview) -> SaslHandshakeResponse:
        r = Reader(data)
        error_code = r.int16()
        mechanisms = r.array(lambda r: r.string() or "") or []
        return SaslHandshakeResponse(error_code, mechanisms)
