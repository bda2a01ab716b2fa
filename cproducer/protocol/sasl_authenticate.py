"""SaslAuthenticate (key 36), versions 0-2 (SaslAuthenticateRequest.json / Response.json); v2
is flexible.

request:  auth_bytes bytes (the mechanism's next client message)
response: error_code int16, error_message nullable string, auth_bytes bytes (the server's
          challenge or final message), session_lifetime_ms int64 (v1+: KIP-368, 0 = no limit)

The request's ``repr`` never shows ``auth_bytes``: they hold a password (PLAIN), a proof (SCRAM)
or a bearer token (OAUTHBEARER).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

from cproducer.protocol.primitives import Reader, Writer


@dataclass
class SaslAuthenticateResponse:
    error_code: int
    error_message: Optional[str]
    auth_bytes: bytes = field(repr=False)
    session_lifetime_ms: int = 0


@dataclass
class SaslAuthenticateRequest:
    API_KEY = 36
    MIN_VERSION = 0
    MAX_VERSION = 2
    FIRST_FLEXIBLE_VERSION = 2
    auth_bytes: bytes = field(default=b"", repr=False)

    def expect_response(self) -> bool:
        return True

    def encode_body(self, version: int) -> List[Any]:
        flex = version >= 2
        w = Writer().bytes_(self.auth_bytes, compact=flex)
        if flex:
            w.tagged_fields()
        return [w.buf]

    @staticmethod
    def decode_response(version: int, data: memoryview) -> SaslAuthenticateResponse:
        flex = version >= 2
        r = Reader(data)
        error_code = r.int16()
        message = r.string(compact=flex)
        auth_bytes = r.bytes_(compact=flex) or b""
        lifetime = r.int64() if version >= 1 else 0
        if flex:
            r.tagged_fields()
        return SaslAuthenticateResponse(error_code, message, auth_bytes, lifetime)
