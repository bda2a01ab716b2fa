"""ApiVersions (key 18), versions 0-3 (ApiVersionsRequest.json / ApiVersionsResponse.json).

Its response header is always v0 (no tagged fields), even for the flexible v3, so that a client
can read the answer of a broker that does not know the version it asked for.

v3's body ends with tagged fields (KIP-584's feature versioning); the client reads two:
``FinalizedFeaturesEpoch`` (tag 1, int64, default -1) and ``FinalizedFeatures`` (tag 2, a compact
array of ``name compact string, max_version_level int16, min_version_level int16`` + tagged
fields): the feature levels the cluster's controller has finalized, e.g. ``transaction.version``
(the producer uses transactions version 2, KIP-890 part 2, when it is 2 or more, as Java 4.x
does). ``SupportedFeatures`` (tag 0: what this broker could support) and ``ZkMigrationReady``
(tag 3) are skipped.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from cproducer._version import __version__
from cproducer.errors import CorruptResponseError
from cproducer.protocol.end_txn import FIRST_TRANSACTION_V2_VERSION, EndTxnRequest
from cproducer.protocol.primitives import Reader, Writer
from cproducer.protocol.produce import LAST_VERSION_BEFORE_TRANSACTION_V2, ProduceRequest

T = TypeVar("T")

#: what transactions version 2 sends on the wire: (API key, first version of version 2)
_TRANSACTION_V2_VERSIONS = (
    (ProduceRequest.API_KEY, LAST_VERSION_BEFORE_TRANSACTION_V2 + 1),
    (EndTxnRequest.API_KEY, FIRST_TRANSACTION_V2_VERSION),
)


def _speaks_transaction_v2(highest: Callable[[int], int]) -> bool:
    """Whether ``highest`` (API key -> its highest version) reaches Produce v12 and EndTxn v5."""
    return all(highest(key) >= first for key, first in _TRANSACTION_V2_VERSIONS)


UNSUPPORTED_VERSION = 35
_FINALIZED_FEATURES_EPOCH_TAG = 1
_FINALIZED_FEATURES_TAG = 2
#: ``FinalizedFeaturesEpoch``'s default: the broker named no finalized features
NO_FEATURES_EPOCH = -1


@dataclass
class ApiVersionsResponse:
    error_code: int
    api_versions: Dict[int, Tuple[int, int]] = field(default_factory=dict)
    throttle_time_ms: int = 0
    #: v3+: the finalized features' epoch (it grows with each change of a feature level)
    finalized_features_epoch: int = NO_FEATURES_EPOCH
    #: v3+: finalized feature name -> its max version level (the level in force)
    finalized_features: Dict[str, int] = field(default_factory=dict)


class FinalizedFeatures:
    """The newest finalized features any broker of the cluster answered (Java's
    ``ApiVersions.maxFinalizedFeaturesEpoch`` and ``getFinalizedFeaturesInfo``): the network
    client updates it with each ApiVersions answer, the transaction manager reads it. Brokers
    learn a feature change at different moments, so the answer with the highest epoch wins,
    whichever broker gave it.

    ``release_caps``: kafka-python's ``api_version``, a release's highest versions
    (``broker_versions.caps_for``). A client of a release older than 4.0 has no transactions
    version 2 (Produce v12, EndTxn v5): for it the features stay unknown, as that client would
    not read them."""

    def __init__(self, release_caps: Optional[Dict[int, int]] = None) -> None:
        self._lock = threading.Lock()
        self.epoch = NO_FEATURES_EPOCH
        self.features: Dict[str, int] = {}
        self._ignored = release_caps is not None and not _speaks_transaction_v2(
            lambda key: release_caps.get(key, 0)
        )

    def update(self, response: ApiVersionsResponse) -> None:
        if self._ignored:
            return
        # Transactions version 2 is Produce v12 and EndTxn v5 on the wire: an answer that does
        # not offer both (a proxy that narrows the versions but passes the features through)
        # names no usable features, lest the producer skip AddPartitionsToTxn and then send a
        # Produce the broker takes for version 1's
        versions = response.api_versions
        if not _speaks_transaction_v2(lambda key: versions.get(key, (0, 0))[1]):
            return
        with self._lock:
            if response.finalized_features_epoch > self.epoch:
                self.epoch = response.finalized_features_epoch
                self.features = dict(response.finalized_features)

    def snapshot(self) -> Tuple[int, Dict[str, int]]:
        """``(epoch, {feature: level})``, read together."""
        with self._lock:
            return self.epoch, self.features


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
    out = ApiVersionsResponse(error_code, versions, throttle)
    if flexible:
        for tag, data in r.tagged_field_items():
            if tag == _FINALIZED_FEATURES_EPOCH_TAG:
                out.finalized_features_epoch = _whole(data, lambda f: f.int64())
            elif tag == _FINALIZED_FEATURES_TAG:
                out.finalized_features = dict(_whole(data, _read_finalized_features))
    return out, r.remaining()


def _read_finalized_feature(r: Reader) -> Tuple[str, int]:
    name, max_level, _min_level = r.string(True) or "", r.int16(), r.int16()
    r.tagged_fields()
    return name, max_level


def _read_finalized_features(r: Reader) -> List[Tuple[str, int]]:
    return r.array(_read_finalized_feature, True) or []


def _whole(data: memoryview, read: Callable[[Reader], T]) -> T:
    """A tagged field's value, which must fill its declared size exactly."""
    sub = Reader(data)
    value = read(sub)
    if sub.remaining():
        raise CorruptResponseError(f"a tagged field of {len(data)} bytes, {sub.remaining()} unread")
    return value
