"""Codecs of a RecordBatch's records section, written as the Java client writes them.

Attribute codes: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.

- gzip: a gzip stream (header, deflate, trailer), not a bare zlib stream.
- snappy: xerial framing, as Java's ``SnappyOutputStream``: the magic ``\\x82SNAPPY\\x00``, int32
  version 1, int32 compatible version 1, then chunks ``[int32 big-endian length][raw snappy block]``
  of at most 32 KiB of input each. Reading also accepts one bare raw block (what librdkafka writes).
- lz4: an LZ4 frame with 64 KiB *independent* blocks and no content size/checksum: Java's
  ``Lz4BlockInputStream`` decodes every block on its own, so linked blocks break Java consumers.
- zstd: a standard zstd frame.

Per-batch calls (never per record); the codec libraries release the GIL while they work.
"""

from __future__ import annotations

import enum
import struct
import threading
import zlib
from typing import Any, Callable, Dict, Optional, Tuple

from cproducer.errors import UnsupportedCodecError


class CompressionType(enum.IntEnum):
    """Java's CompressionType: the codec id in bits 0-2 of a batch's attributes. The one table
    of codecs: config values, the builder's checks and the codec functions below key on it."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD = CompressionType
NAMES: Dict[int, str] = {codec: codec.name.lower() for codec in CompressionType}

# KIP-390 levels (Java's GzipCompression, Lz4Compression, ZstdCompression): the default, and the
# range ``compression.<codec>.level`` accepts. gzip's -1 is zlib's default (6).
DEFAULT_LEVELS: Dict[int, int] = {CODEC_GZIP: -1, CODEC_LZ4: 9, CODEC_ZSTD: 3}
LEVEL_RANGES: Dict[int, Tuple[int, int]] = {
    CODEC_GZIP: (1, 9),
    CODEC_LZ4: (1, 17),
    CODEC_ZSTD: (-131072, 22),
}
_IDS = {name: cid for cid, name in NAMES.items()}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK = 32 * 1024


def codec_id(name: Optional[str]) -> int:
    """Attribute code of a codec name (None/"none", "gzip", "snappy", "lz4", "zstd")."""
    if name is None:
        return CODEC_NONE
    cid = _IDS.get(str(name).lower())
    if cid is None:
        raise ValueError(f"compression type must be one of None, {', '.join(_IDS)}; got {name!r}")
    return cid


def _missing(codec: str, module: str, extra: str) -> UnsupportedCodecError:
    return UnsupportedCodecError(
        f"{codec} compression needs the {module!r} package: pip install cproducer[{extra}]"
    )


def _snappy() -> Any:
    try:
        import cramjam
    except ImportError:
        raise _missing("snappy", "cramjam", "snappy") from None
    return cramjam.snappy


def _zstd() -> Any:
    try:
        import zstandard
    except ImportError:
        raise _missing("zstd", "zstandard", "zstd") from None
    return zstandard


def _lz4() -> Any:
    try:
        import lz4.frame
    except ImportError:
        raise _missing("lz4", "lz4", "lz4") from None
    return lz4.frame


# ------------------------------------------------------------------ compress


def _gzip_compress(data: Any, level: int = DEFAULT_LEVELS[CODEC_GZIP]) -> bytes:
    c = zlib.compressobj(level if level >= 0 else zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def _snappy_compress(data: Any, level: int = -1) -> bytes:
    snappy = _snappy()
    view = memoryview(data).cast("B")
    parts: list = [XERIAL_HEADER]
    for start in range(0, len(view), XERIAL_BLOCK):
        block = snappy.compress_raw(view[start : start + XERIAL_BLOCK])
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)  # joined below without a per-chunk bytes copy
    return b"".join(parts)


def _lz4_compress(data: Any, level: int = DEFAULT_LEVELS[CODEC_LZ4]) -> bytes:
    frame = _lz4()
    # as Java's Lz4BlockOutputStream: the default level is lz4's fast compressor, any other level
    # the high-compression one at that level (lz4 caps it at its own maximum)
    hc_level = 0 if level == DEFAULT_LEVELS[CODEC_LZ4] else min(level, frame.COMPRESSIONLEVEL_MAX)
    return frame.compress(
        data,
        compression_level=hc_level,
        block_size=frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )


# A ZstdCompressor keeps its (large) context between calls but must not be shared by threads:
# one per thread and level.
_zstd_local = threading.local()


def _zstd_compress(data: Any, level: int = DEFAULT_LEVELS[CODEC_ZSTD]) -> bytes:
    cache: Optional[Dict[int, Any]] = getattr(_zstd_local, "compressors", None)
    if cache is None:
        cache = _zstd_local.compressors = {}
    compressor = cache.get(level)
    if compressor is None:
        # the frame carries its content size (kafka-python's one-shot decoder needs it)
        compressor = cache[level] = _zstd().ZstdCompressor(level=level, write_content_size=True)
    return compressor.compress(data)


_COMPRESS: Dict[int, Callable[..., bytes]] = {
    CODEC_GZIP: _gzip_compress,
    CODEC_SNAPPY: _snappy_compress,
    CODEC_LZ4: _lz4_compress,
    CODEC_ZSTD: _zstd_compress,
}


def compress(codec: int, data: Any, level: Optional[int] = None) -> bytes:
    """Compress a records section with the codec of attribute code ``codec``, at ``level``
    (None: the codec's default; snappy has no levels)."""
    try:
        fn = _COMPRESS[codec]
    except KeyError:
        raise ValueError(f"unknown compression codec {codec}; expected 1..4") from None
    return fn(data) if level is None or codec == CODEC_SNAPPY else fn(data, level)


def check_available(codec: int) -> None:
    """Raise ImportError (naming the pip extra) now, not at the first batch."""
    if codec == CODEC_SNAPPY:
        _snappy()
    elif codec == CODEC_ZSTD:
        _zstd()
    elif codec == CODEC_LZ4:
        _lz4()


# ------------------------------------------------------------------ decompress


def _snappy_decompress(data: Any) -> bytes:
    snappy = _snappy()
    view = memoryview(data).cast("B")
    if bytes(view[:8]) != XERIAL_MAGIC:
        return bytes(snappy.decompress_raw(view))
    if len(view) < 16:
        raise ValueError("truncated xerial snappy header")
    pos, out = 16, []
    while pos < len(view):
        if pos + 4 > len(view):
            raise ValueError("truncated xerial snappy chunk header")
        (n,) = struct.unpack_from(">i", view, pos)
        pos += 4
        if n < 0 or pos + n > len(view):
            raise ValueError("truncated xerial snappy chunk")
        out.append(bytes(snappy.decompress_raw(view[pos : pos + n])))
        pos += n
    return b"".join(out)


def _read_concatenated(new_decompressor: Callable[[], Any], data: Any, what: str) -> bytes:
    """Members or frames one after another, as Java's GZIPInputStream and ZstdInputStream read
    them; ValueError naming ``what`` when the last one is cut short."""
    out, rest = [], bytes(data)
    while True:
        d = new_decompressor()
        out.append(d.decompress(rest))
        if not d.eof:
            raise ValueError(f"truncated {what}")
        rest = d.unused_data
        if not rest:
            return b"".join(out)


def _gzip_decompress(data: Any) -> bytes:
    return _read_concatenated(lambda: zlib.decompressobj(47), data, "gzip stream")


def _zstd_decompress(data: Any) -> bytes:
    # also frames without a content size
    zstandard = _zstd()
    return _read_concatenated(
        lambda: zstandard.ZstdDecompressor().decompressobj(), data, "zstd frame"
    )


def decompress(codec: int, data: Any) -> bytes:
    """Decompress a records section written with the codec of attribute code ``codec``."""
    if codec == CODEC_GZIP:
        return _gzip_decompress(data)
    if codec == CODEC_SNAPPY:
        return _snappy_decompress(data)
    if codec == CODEC_LZ4:
        return _lz4().decompress(bytes(data))
    if codec == CODEC_ZSTD:
        return _zstd_decompress(data)
    raise ValueError(f"unknown compression codec {codec}; expected 1..4")
