"""ApiVersions (key 18), versions 0-3 (ApiVersionsRequest.json / ApiVersionsResponse.json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

from cproducer.protocol.primitives import Reader, Writer


@dataclass
class ApiVersionsResponse:
    error_code: int
    api_versions: Dict[int, Tuple[int, int]] = field(default_factory=dict)
    throttle_time_ms: int = 0


@dataclass
class ApiVersionsRequest:
    API_KEY = 18
    MIN_VERSION = 0
    MAX_VERSION = 3
    FIRST_FLEXIBLE_VERSION = 3
    client_software_name: str = "cproducer"
    client_software_version: str = "0.1.0"

    def expect_response(self) -> bool:
        return True

    def encode_body(self, version: int) -> List[Any]:
        w = Writer()
        if version >= 3:
            w.string(self.client_software_name, compact=True)
            w.string(self.client_software_version, compact=True)
            w.tagged_fields()
        return [w.buf]

    @staticmethod
    def decode_response(version: int, data: memoryview) -> ApiVersionsResponse:
        r = Reader(data)
        flexible = version >= 3
        error_code = r.int16()
        # A broker that does not support our version answers in the v0 layout (UNSUPPORTED_VERSION)
        if error_code == 35 and flexible:
            flexible = False
        versions: Dict[int, Tuple[int, int]] = {}
        for _ in range(r.array_length(flexible)):
            key, lo, hi = r.int16(), r.int16(), r.int16()
            if flexible:
                r.tagged_fields()
            versions[key] = (lo, hi)
        throttle = 0
        if version >= 1 and r.remaining() >= 4:
            throttle = r.int32()
        if flexible:
            r.tagged_fields()
        return ApiVersionsResponse(error_code, versions, throttle)
