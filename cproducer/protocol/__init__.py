"""Hand-written Kafka protocol codecs for the APIs a producer needs.

Each request class knows its API key, the versions we speak, the first flexible version, how to
encode its body (a list of parts: record batches stay separate buffers) and how to decode its
response body. ``encode_request`` / ``encode_frame`` add the size prefix and the request header;
``decode_response_header`` strips the response header.
"""

from __future__ import annotations

import struct
from typing import Any, List, Optional, Tuple

from cproducer.errors import CorruptResponseError, UnsupportedVersionError
from cproducer.protocol.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
)
from cproducer.protocol.api_versions import ApiVersionsRequest, ApiVersionsResponse
from cproducer.protocol.create_topics import (
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    NewTopic,
)
from cproducer.protocol.end_txn import EndTxnRequest, EndTxnResponse
from cproducer.protocol.error_codes import ErrorCode
from cproducer.protocol.find_coordinator import (
    KEY_TYPE_GROUP,
    KEY_TYPE_TRANSACTION,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from cproducer.protocol.header import read_response_header, request_header, response_header_version
from cproducer.protocol.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from cproducer.protocol.metadata import (
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from cproducer.protocol.primitives import Reader, Writer
from cproducer.protocol.produce import PartitionProduceResponse, ProduceRequest, ProduceResponse
from cproducer.protocol.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from cproducer.protocol.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from cproducer.protocol.txn_offsets import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from cproducer.protocol.writer import request_frame

__all__ = [
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "KEY_TYPE_GROUP",
    "KEY_TYPE_TRANSACTION",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "CreatableTopicResult",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "EndTxnRequest",
    "EndTxnResponse",
    "ErrorCode",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "MetadataRequest",
    "MetadataResponse",
    "NewTopic",
    "PartitionMetadata",
    "PartitionProduceResponse",
    "ProduceRequest",
    "ProduceResponse",
    "Reader",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "TopicMetadata",
    "Writer",
    "choose_version",
    "decode_response_header",
    "encode_frame",
    "encode_request",
]


def is_flexible(request_cls: Any, version: int) -> bool:
    return bool(version >= request_cls.FIRST_FLEXIBLE_VERSION)


def encode_request(
    request: Any, version: int, correlation_id: int, client_id: Optional[str]
) -> List[memoryview]:
    """The whole frame as parts: [size + header + first body part, body parts...], each a 1-D
    byte memoryview (see ``encode_frame``)."""
    return encode_frame(request, version, correlation_id, client_id)[0]


def encode_frame(
    request: Any, version: int, correlation_id: int, client_id: Optional[str]
) -> Tuple[List[memoryview], int]:
    """``(parts, size)``: the frame as ``encode_request`` gives it and its length in bytes, size
    prefix included. The parts are the gather write's buffers as they are (a record batch is
    its own memoryview), and the size is counted in C as they are made: the I/O thread runs no
    Python per part (``request_frame``)."""
    header = request_header(
        request.API_KEY, version, correlation_id, client_id, is_flexible(type(request), version)
    )
    return request_frame(header, request.encode_body(version))


def decode_response_header(api_key: int, flexible: bool, frame: memoryview) -> Tuple[int, Any]:
    """(correlation id, body) of a response frame (size prefix already removed)."""
    reader = Reader(frame)
    correlation_id = read_response_header(reader, response_header_version(api_key, flexible))
    return correlation_id, frame[reader.pos :]


def decode_response(request: Any, version: int, body: memoryview) -> Any:
    try:
        return request.decode_response(version, body)
    except CorruptResponseError:
        raise
    except (ValueError, IndexError, struct.error, UnicodeDecodeError) as exc:
        msg = f"cannot decode {type(request).__name__} v{version}: {exc}"
        raise CorruptResponseError(msg) from exc


def choose_version(request_cls: Any, broker_range: Optional[Tuple[int, int]]) -> int:
    """Highest version both sides speak."""
    if broker_range is None:
        raise UnsupportedVersionError(f"the broker does not support {request_cls.__name__}")
    lo = max(request_cls.MIN_VERSION, broker_range[0])
    hi = min(request_cls.MAX_VERSION, broker_range[1])
    if lo > hi:
        raise UnsupportedVersionError(
            f"{request_cls.__name__}: we speak v{request_cls.MIN_VERSION}-"
            f"{request_cls.MAX_VERSION}, the broker v{broker_range[0]}-{broker_range[1]}"
        )
    return hi
