"""Codecs of a RecordBatch's records section, written as the Java client writes them.

Attribute codes: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.

- gzip: a gzip stream (header, deflate, trailer), not a bare zlib stream.
- snappy: xerial framing, as Java's ``SnappyOutputStream``: the magic ``\\x82SNAPPY\\x00``, int32
  version 1, int32 compatible version 1, then chunks ``[int32 big-endian length][raw snappy block]``
  of at most 32 KiB of input each. Reading also accepts one bare raw block (what librdkafka writes).
- lz4: an LZ4 frame with 64 KiB *independent* blocks and no content size/checksum: Java's
  ``Lz4BlockInputStream`` decodes every block on its own, so linked blocks break Java consumers.
- zstd: a standard zstd frame.

A batch's records are compressed as they are appended (Java's compressing output stream): the
builder hands each filled block of records to a ``stream_compressor`` (gzip, snappy, lz4), and the
stream ends when the batch closes; zstd compresses a batch at once when it closes (its frame
carries the content size). Default-level lz4 blocks are compressed in C by the builder, through
the lz4 library's block function (``lz4_block_compress_address``), holding the GIL; the codec
libraries called from Python release it while they work.
"""

from __future__ import annotations

import ctypes
import enum
import struct
import threading
import zlib
from typing import Any, Callable, Dict, Optional, Protocol, Tuple

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


# the codec libraries, imported once on first use (a batch's calls then cost no import lookup)
_modules: Dict[str, Any] = {}


def _snappy() -> Any:
    mod = _modules.get("snappy")
    if mod is None:
        try:
            import cramjam
        except ImportError:
            raise _missing("snappy", "cramjam", "snappy") from None
        mod = _modules["snappy"] = cramjam.snappy
    return mod


def _zstd() -> Any:
    mod = _modules.get("zstd")
    if mod is None:
        try:
            import zstandard
        except ImportError:
            raise _missing("zstd", "zstandard", "zstd") from None
        mod = _modules["zstd"] = zstandard
    return mod


def _lz4() -> Any:
    mod = _modules.get("lz4")
    if mod is None:
        try:
            import lz4.frame
        except ImportError:
            raise _missing("lz4", "lz4", "lz4") from None
        mod = _modules["lz4"] = lz4.frame
    return mod


# ------------------------------------------------------------------ compress


def _gzip_compress(data: Any, level: int = DEFAULT_LEVELS[CODEC_GZIP]) -> bytes:
    c = zlib.compressobj(level if level >= 0 else zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def _snappy_chunks(data: Any, parts: list) -> list:
    # xerial chunks of at most 32 KiB of input each, appended to ``parts``
    snappy = _snappy()
    view = memoryview(data).cast("B")
    for start in range(0, len(view), XERIAL_BLOCK):
        block = snappy.compress_raw(view[start : start + XERIAL_BLOCK])
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)  # joined below without a per-chunk bytes copy
    return parts


def _snappy_compress(data: Any, level: int = -1) -> bytes:
    return b"".join(_snappy_chunks(data, [XERIAL_HEADER]))


def _lz4_hc_level(level: int) -> int:
    # as Java's Lz4BlockOutputStream: the default level is lz4's fast compressor (0), any other
    # level the high-compression one at that level (lz4 caps it at its own maximum)
    return 0 if level == DEFAULT_LEVELS[CODEC_LZ4] else min(level, _lz4().COMPRESSIONLEVEL_MAX)


def _lz4_compress(data: Any, level: int = DEFAULT_LEVELS[CODEC_LZ4]) -> bytes:
    frame = _lz4()
    return frame.compress(
        data,
        compression_level=_lz4_hc_level(level),
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


# ------------------------------------------------------------------ compress as records come

# An LZ4 frame as Java's KafkaLZ4BlockOutputStream writes it: FLG 0x60 (version 1, independent
# blocks, no block or content checksum, no content size), BD 0x40 (64 KiB blocks); its header
# checksum byte is the library's (taken from an empty frame it makes). Then blocks of at most 64
# KiB of input, each [uint32 LE size (bit 31: stored uncompressed)][data], and the end mark 0.
LZ4_BLOCK_MAX = 64 * 1024
LZ4_END_MARK = b"\x00\x00\x00\x00"


def lz4_frame_header() -> bytes:
    """The 7-byte frame header of our lz4 frames (magic, FLG, BD, header checksum)."""
    empty = _lz4_compress(b"")
    return empty[: len(empty) - len(LZ4_END_MARK)]


def _lz4_extension() -> Optional[ctypes.CDLL]:
    """The lz4 package's block extension (already loaded), opened for its C symbols; None where
    it cannot be."""
    try:
        import lz4.block

        return ctypes.CDLL(lz4.block._block.__file__)
    except (ImportError, OSError, AttributeError):
        return None


def _symbol_address(lib: ctypes.CDLL, name: str) -> int:
    """The address of the function ``name`` in ``lib``; 0 when it has none."""
    try:
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


def lz4_block_compress_address() -> Tuple[int, int, int]:
    """The addresses of the lz4 library's ``LZ4_compress_fast_extState`` and of its
    ``_fastReset`` variant (0 when absent: it is in lz4's static-linking API) and the size of
    their state, as ``(address, fast_reset_address, state_size)``, from the lz4 package's own
    extension (already loaded); (0, 0, 0) where its symbols cannot be reached (the builder then
    uses ``stream_compressor``)."""
    lib = _lz4_extension()
    if lib is None:
        return 0, 0, 0
    address = _symbol_address(lib, "LZ4_compress_fast_extState")
    sizeof_state = getattr(lib, "LZ4_sizeofState", None) if address else None
    if sizeof_state is None:
        return 0, 0, 0
    sizeof_state.restype = ctypes.c_int
    fast_address = _symbol_address(lib, "LZ4_compress_fast_extState_fastReset")
    return address, fast_address, int(sizeof_state())


def lz4_gap_reset_addresses() -> Tuple[int, int]:
    """The addresses of the lz4 library's ``LZ4_resetStream_fast`` and
    ``LZ4_compress_fast_continue``, as ``(reset_address, continue_address)``, from the lz4
    package's extension; (0, 0) where either cannot be reached.

    The pair compresses an independent block without clearing the state's hash table: the reset
    moves the state's offsets 64 KiB past every entry in it (lz4 never matches that far back)
    and drops its dictionary, so the block that follows refers to nothing before it. The
    ``_extState_fastReset`` function instead clears the whole 16 KiB table before every block of
    4 KiB or more."""
    lib = _lz4_extension()
    if lib is None:
        return 0, 0
    reset = _symbol_address(lib, "LZ4_resetStream_fast")
    cont = _symbol_address(lib, "LZ4_compress_fast_continue")
    return (reset, cont) if reset and cont else (0, 0)


class StreamCompressor(Protocol):
    """One batch's records section, compressed block by block as the records come."""

    def compress(self, data: Any) -> bytes:
        """The compressed form of the next block of records (the stream's header first)."""

    def finish(self) -> bytes:
        """The end of the stream (the batch is closing)."""

    def tail(self) -> bytes:
        """What would end the stream now, leaving it open: what was compressed so far, plus
        this, decompresses (an open batch read back)."""


class _GzipStream:
    def __init__(self, level: int) -> None:
        self._c = zlib.compressobj(
            level if level >= 0 else zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 31
        )

    def compress(self, data: Any) -> bytes:
        return self._c.compress(data)

    def finish(self) -> bytes:
        return self._c.flush()

    def tail(self) -> bytes:
        return self._c.copy().flush()


class _SnappyStream:
    def __init__(self) -> None:
        self._started = False

    def compress(self, data: Any) -> bytes:
        parts = _snappy_chunks(data, [] if self._started else [XERIAL_HEADER])
        self._started = True
        return b"".join(parts)

    def finish(self) -> bytes:
        return b"" if self._started else XERIAL_HEADER

    def tail(self) -> bytes:
        return b""


class _Lz4Stream:
    def __init__(self, level: int) -> None:
        frame = _lz4()
        self._c = frame.LZ4FrameCompressor(
            block_size=frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            compression_level=_lz4_hc_level(level),
            content_checksum=False,
            block_checksum=False,
            auto_flush=True,  # every block out at once: the stream so far always decodes
        )
        self._started = False

    def compress(self, data: Any) -> bytes:
        head = b"" if self._started else self._c.begin()
        self._started = True
        return head + self._c.compress(data)

    def finish(self) -> bytes:
        head = b"" if self._started else self._c.begin()
        self._started = True
        return head + self._c.flush()

    def tail(self) -> bytes:
        return LZ4_END_MARK


def stream_compressor(codec: int, level: Optional[int] = None) -> Optional[StreamCompressor]:
    """A compressor of one batch's records as they come, or None for a codec that compresses a
    batch at once (zstd)."""
    if codec == CODEC_GZIP:
        return _GzipStream(DEFAULT_LEVELS[CODEC_GZIP] if level is None else level)
    if codec == CODEC_SNAPPY:
        _snappy()
        return _SnappyStream()
    if codec == CODEC_LZ4:
        return _Lz4Stream(DEFAULT_LEVELS[CODEC_LZ4] if level is None else level)
    if codec == CODEC_ZSTD:
        return None
    raise ValueError(f"unknown compression codec {codec}; expected 1..4")


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
