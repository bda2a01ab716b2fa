"""Request header v1/v2 and response header v0/v1 (RequestHeader.json / ResponseHeader.json).

Request: api_key int16, api_version int16, correlation_id int32, client_id nullable string
(never compact), and in v2 (flexible requests) a tagged-fields section. Response: correlation_id
int32, plus tagged fields in v1 (flexible responses), except ApiVersions, always v0.
"""

from __future__ import annotations

from typing import Optional, Tuple

from cproducer.protocol.primitives import Reader, Writer

API_VERSIONS_KEY = 18


def request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: Optional[str], flexible: bool
) -> Writer:
    w = Writer()
    w.int16(api_key).int16(api_version).int32(correlation_id)
    w.string(client_id, nullable=True)
    if flexible:
        w.tagged_fields()
    return w


def response_header_version(api_key: int, flexible: bool) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if flexible else 0


def read_response_header(reader: Reader, header_version: int) -> int:
    correlation_id = reader.int32()
    if header_version >= 1:
        reader.tagged_fields()
    return correlation_id


def peek_correlation_id(frame: memoryview) -> Tuple[int, int]:
    """(correlation id, 4): the id of a response frame without decoding the rest."""
    return Reader(frame).int32(), 4
