"""FindCoordinator (key 10), versions 0-5 (FindCoordinatorRequest.json / Response.json).

v0-3 ask for one key and answer one coordinator; v4 asks for a list of keys (we send one) and
answers a list; v5 is v4 for a client that knows TRANSACTION_ABORTABLE (KIP-890). v3+ are
flexible. Key type 1 is a transaction coordinator (0: a group's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from cproducer.errors import CorruptResponseError
from cproducer.protocol.primitives import Reader, Writer
from cproducer.protocol.txn_request import TxnRequest

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1


@dataclass
class FindCoordinatorResponse:
    throttle_time_ms: int
    error_code: int
    error_message: Optional[str]
    node_id: int
    host: str
    port: int


@dataclass
class FindCoordinatorRequest(TxnRequest):
    API_KEY = 10
    MAX_VERSION = 5
    FIRST_FLEXIBLE_VERSION = 3
    key: str = ""
    key_type: int = KEY_TYPE_TRANSACTION

    def write_fields(self, w: Writer, version: int, flex: bool) -> None:
        if version <= 3:
            w.string(self.key, compact=flex)
        if version >= 1:
            w.int8(self.key_type)
        if version >= 4:
            w.array_length(1, compact=True)
            w.string(self.key, compact=True)

    @classmethod
    def decode_response(cls, version: int, data: memoryview) -> FindCoordinatorResponse:
        """The coordinator of our one key (v4+: the first entry of the list)."""
        flex = cls.flexible(version)
        r = Reader(data)
        throttle = r.int32() if version >= 1 else 0
        if version <= 3:
            error_code = r.int16()
            message = r.string(compact=flex) if version >= 1 else None
            node_id, host, port = r.int32(), r.string(compact=flex), r.int32()
        else:
            coordinators = r.array(_read_coordinator, compact=True) or []
            if not coordinators:
                raise CorruptResponseError("FindCoordinator v4+ answered no coordinator")
            _key, node_id, host, port, error_code, message = coordinators[0]
        if flex:
            r.tagged_fields()
        return FindCoordinatorResponse(throttle, error_code, message, node_id, host or "", port)


def _read_coordinator(r: Reader) -> Any:
    out = (r.string(True), r.int32(), r.string(True), r.int32(), r.int16(), r.string(True))
    r.tagged_fields()
    return out
