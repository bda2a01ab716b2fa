"""ApiVersions (key 18), versions 0-3 (ApiVersionsRequest.json / ApiVersionsResponse.json).

Its response header is always v0 (no tagged fields), even for the flexible v3, so that a client
can read the answer of a broker that does not know the version it asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

from cproducer._version import __version__
from cproducer.errors import CorruptResponseError
from cproducer.protocol.primitives import Reader, Writer

UNSUPPORTED_VERSION = 35


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
    client_software_version: str = __version__

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
        if version > 0 and r.int16() == UNSUPPORTED_VERSION:
            # A broker that does not speak our version answers UNSUPPORTED_VERSION in the v0
            # layout (Kafka's do); accept our own layout too, if it fits exactly.
            try:
                resp, rest = _decode(version, data)
                if rest == 0:
                    return resp
            except CorruptResponseError:
                pass
            version = 0
        return _decode(version, data)[0]


def _decode(version: int, data: memoryview) -> Tuple[ApiVersionsResponse, int]:
    """The response and how many bytes were left over."""
    r = Reader(data)
    flexible = version >= 3
    error_code = r.int16()
    versions: Dict[int, Tuple[int, int]] = {}
    for _ in range(r.array_length(flexible)):
        key, lo, hi = r.int16(), r.int16(), r.int16()
        if flexible:
            r.tagged_fields()
        versions[key] = (lo, hi)
    throttle = r.int32() if version >= 1 else 0
    if flexible:
        r.tagged_fields()
    return ApiVersionsResponse(error_code, versions, throttle), r.remaining()
