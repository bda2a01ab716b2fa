"""The protocol versions each Kafka release speaks, for the APIs this client sends.

kafka-python's ``api_version=(2, 5, 0)`` means "talk to the brokers as a client of that release
would": no request newer than that release understands. ``caps_for(release)`` gives, per API key,
the highest version the release answers; ``cap(api_versions, caps)`` narrows what a broker's
ApiVersions answer offers to it (an API the release did not have is dropped), so every version
the client picks afterwards (``choose_version``, the SASL exchange) stays within the release.

The figures are the releases' own ApiVersions answers (Apache Kafka 0.11 to 4.3), for the API
keys: 0 Produce, 3 Metadata, 10 FindCoordinator, 17 SaslHandshake, 18 ApiVersions,
19 CreateTopics, 22 InitProducerId, 24 AddPartitionsToTxn, 25 AddOffsetsToTxn, 26 EndTxn,
28 TxnOffsetCommit, 36 SaslAuthenticate (new in 1.0).
"""

from __future__ import annotations

from typing import Dict, Tuple

#: release -> {api key: highest version}
RELEASES: Dict[Tuple[int, ...], Dict[int, int]] = {
    (0, 11): {0: 3, 3: 4, 10: 1, 17: 0, 18: 1, 19: 2, 22: 0, 24: 0, 25: 0, 26: 0, 28: 0},
    (1, 0): {0: 5, 3: 5, 10: 1, 17: 1, 18: 1, 19: 2, 22: 0, 24: 0, 25: 0, 26: 0, 28: 0, 36: 0},
    (1, 1): {0: 5, 3: 5, 10: 1, 17: 1, 18: 1, 19: 2, 22: 0, 24: 0, 25: 0, 26: 0, 28: 0, 36: 0},
    (2, 0): {0: 6, 3: 6, 10: 2, 17: 1, 18: 2, 19: 3, 22: 1, 24: 1, 25: 1, 26: 1, 28: 1, 36: 0},
    (2, 1): {0: 7, 3: 7, 10: 2, 17: 1, 18: 2, 19: 3, 22: 1, 24: 1, 25: 1, 26: 1, 28: 2, 36: 0},
    (2, 2): {0: 7, 3: 7, 10: 2, 17: 1, 18: 2, 19: 3, 22: 1, 24: 1, 25: 1, 26: 1, 28: 2, 36: 1},
    (2, 3): {0: 7, 3: 8, 10: 2, 17: 1, 18: 2, 19: 3, 22: 1, 24: 1, 25: 1, 26: 1, 28: 2, 36: 1},
    (2, 4): {0: 8, 3: 9, 10: 3, 17: 1, 18: 3, 19: 5, 22: 2, 24: 1, 25: 1, 26: 1, 28: 2, 36: 1},
    (2, 5): {0: 8, 3: 9, 10: 3, 17: 1, 18: 3, 19: 5, 22: 3, 24: 1, 25: 1, 26: 1, 28: 3, 36: 2},
    (2, 6): {0: 8, 3: 9, 10: 3, 17: 1, 18: 3, 19: 5, 22: 3, 24: 1, 25: 1, 26: 1, 28: 3, 36: 2},
    (2, 7): {0: 8, 3: 9, 10: 3, 17: 1, 18: 3, 19: 6, 22: 4, 24: 2, 25: 2, 26: 2, 28: 3, 36: 2},
    (2, 8): {0: 9, 3: 11, 10: 3, 17: 1, 18: 3, 19: 7, 22: 4, 24: 3, 25: 3, 26: 3, 28: 3, 36: 2},
    (3, 0): {0: 9, 3: 11, 10: 4, 17: 1, 18: 3, 19: 7, 22: 4, 24: 3, 25: 3, 26: 3, 28: 3, 36: 2},
    (3, 1): {0: 9, 3: 12, 10: 4, 17: 1, 18: 3, 19: 7, 22: 4, 24: 3, 25: 3, 26: 3, 28: 3, 36: 2},
    (3, 2): {0: 9, 3: 12, 10: 4, 17: 1, 18: 3, 19: 7, 22: 4, 24: 3, 25: 3, 26: 3, 28: 3, 36: 2},
    (3, 3): {0: 9, 3: 12, 10: 4, 17: 1, 18: 3, 19: 7, 22: 4, 24: 3, 25: 3, 26: 3, 28: 3, 36: 2},
    (3, 4): {0: 9, 3: 12, 10: 4, 17: 1, 18: 3, 19: 7, 22: 4, 24: 3, 25: 3, 26: 3, 28: 3, 36: 2},
    (3, 5): {0: 9, 3: 12, 10: 4, 17: 1, 18: 3, 19: 7, 22: 4, 24: 3, 25: 3, 26: 3, 28: 3, 36: 2},
    (3, 6): {0: 9, 3: 12, 10: 4, 17: 1, 18: 3, 19: 7, 22: 4, 24: 4, 25: 3, 26: 3, 28: 3, 36: 2},
    (3, 7): {0: 10, 3: 12, 10: 4, 17: 1, 18: 3, 19: 7, 22: 4, 24: 4, 25: 3, 26: 3, 28: 3, 36: 2},
    (3, 8): {0: 11, 3: 12, 10: 5, 17: 1, 18: 3, 19: 7, 22: 5, 24: 5, 25: 4, 26: 4, 28: 4, 36: 2},
    (3, 9): {0: 11, 3: 12, 10: 6, 17: 1, 18: 4, 19: 7, 22: 5, 24: 5, 25: 4, 26: 4, 28: 4, 36: 2},
    (4, 0): {0: 12, 3: 13, 10: 6, 17: 1, 18: 4, 19: 7, 22: 5, 24: 5, 25: 4, 26: 5, 28: 5, 36: 2},
    (4, 1): {0: 13, 3: 13, 10: 6, 17: 1, 18: 4, 19: 7, 22: 5, 24: 5, 25: 4, 26: 5, 28: 5, 36: 2},
    (4, 2): {0: 13, 3: 13, 10: 6, 17: 1, 18: 4, 19: 7, 22: 5, 24: 5, 25: 4, 26: 5, 28: 5, 36: 2},
    (4, 3): {0: 13, 3: 13, 10: 6, 17: 1, 18: 4, 19: 7, 22: 5, 24: 5, 25: 4, 26: 5, 28: 5, 36: 2},
}


def caps_for(release: Tuple[int, ...]) -> Tuple[Tuple[int, ...], Dict[int, int]]:
    """(the known release used, its caps) for ``release``: the latest known release not newer
    than it, as kafka-python picks (``(2, 5, 1)`` speaks as 2.5; a release newer than the table
    as its newest)."""
    known = [r for r in sorted(RELEASES) if r <= release]
    if not known:
        raise ValueError(f"no protocol versions are known for Kafka {release} (0.11 at the oldest)")
    return known[-1], RELEASES[known[-1]]


def cap(
    api_versions: Dict[int, Tuple[int, int]], caps: Dict[int, int]
) -> Dict[int, Tuple[int, int]]:
    """A broker's ``{api key: (min, max)}`` narrowed to ``caps``: APIs the table does not cover
    stay as they are; an API the release lacks, or whose range ends below the broker's minimum,
    is left out."""
    out: Dict[int, Tuple[int, int]] = {}
    for key, (lo, hi) in api_versions.items():
        if key not in _COVERED:
            out[key] = (lo, hi)
            continue
        top = caps.get(key)
        if top is None or top < lo:
            continue
        out[key] = (lo, min(hi, top))
    return out


_COVERED = frozenset(k for row in RELEASES.values() for k in row)
