"""Codecs: written as Java writes them (xerial snappy, independent-block lz4, gzip stream)."""

from __future__ import annotations

import gzip
import os
import struct

import lz4.frame
import pytest

from cproducer.errors import UnsupportedCodecError
from cproducer.record import compression as c


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
@pytest.mark.parametrize("size", [0, 1, 1000, 32 * 1024, 200_000])
def test_round_trip(codec: int, size: int) -> None:
    data = os.urandom(size // 2) + b"a" * (size - size // 2)
    assert c.decompress(codec, c.compress(codec, data)) == data


def test_gzip_is_a_gzip_stream() -> None:
    out = c.compress(c.CODEC_GZIP, b"hello" * 100)
    assert out[:2] == b"\x1f\x8b"
    assert gzip.decompress(out) == b"hello" * 100


def test_snappy_xerial_framing_with_32k_chunks() -> None:
    data = os.urandom(100_000)
    out = c.compress(c.CODEC_SNAPPY, data)
    assert out[:8] == b"\x82SNAPPY\x00"
    assert struct.unpack(">ii", out[8:16]) == (1, 1)
    pos, chunks = 16, 0
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        pos += 4 + n
        chunks += 1
    assert pos == len(out) and chunks == 4  # ceil(100000 / 32768)


def test_snappy_reads_a_bare_raw_block_too() -> None:
    import cramjam

    raw = bytes(cramjam.snappy.compress_raw(b"librdkafka style" * 10))
    assert c.decompress(c.CODEC_SNAPPY, raw) == b"librdkafka style" * 10


def test_lz4_frame_has_independent_64k_blocks_and_no_content_size() -> None:
    out = c.compress(c.CODEC_LZ4, os.urandom(300_000))
    assert out[:4] == b"\x04\x22\x4d\x18"
    flg, bd = out[4], out[5]
    assert flg & 0x20, "block independence flag must be set (Java decodes blocks on their own)"
    assert not flg & 0x08, "no content size"
    assert not flg & 0x04, "no content checksum"
    assert (bd >> 4) & 0x7 == 4, "64 KiB maximum block size"
    info = lz4.frame.get_frame_info(out)
    assert info["block_linked"] is False


def test_codec_names() -> None:
    assert [c.codec_id(n) for n in (None, "none", "gzip", "snappy", "lz4", "zstd")] == [
        0,
        0,
        1,
        2,
        3,
        4,
    ]
    with pytest.raises(ValueError, match="compression type must be one of"):
        c.codec_id("brotli")


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_kafka_pythons_decoders_read_what_we_compress(codec: int) -> None:
    from kafka import codec as kc

    decode = {1: kc.gzip_decode, 2: kc.snappy_decode, 3: kc.lz4_decode, 4: kc.zstd_decode}[codec]
    data = b"".join(b"line %d " % i + os.urandom(i % 13) for i in range(20_000))
    assert decode(c.compress(codec, data)) == data


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_we_read_what_kafka_python_compresses(codec: int) -> None:
    from kafka import codec as kc

    encode = {1: kc.gzip_encode, 2: kc.snappy_encode, 3: kc.lz4_encode, 4: kc.zstd_encode}[codec]
    data = b"payload " * 20_000 + os.urandom(5000)
    kwargs = {"xerial_compatible": True} if codec == 2 else {}
    assert c.decompress(codec, encode(data, **kwargs)) == data


def test_zstd_frame_carries_its_content_size() -> None:
    import zstandard

    out = c.compress(c.CODEC_ZSTD, b"abc" * 1000)
    assert zstandard.frame_content_size(out) == 3000


def test_zstd_streamed_frames_without_content_size_and_several_frames() -> None:
    import zstandard

    # what Java's ZstdOutputStream writes: no content size in the frame header
    cobj = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    streamed = cobj.compress(b"first " * 500) + cobj.flush()
    assert zstandard.frame_content_size(streamed) == -1
    two = streamed + zstandard.ZstdCompressor().compress(b"second")
    assert c.decompress(c.CODEC_ZSTD, two) == b"first " * 500 + b"second"


def test_gzip_reads_concatenated_members() -> None:
    data = gzip.compress(b"one ") + gzip.compress(b"two")
    assert c.decompress(c.CODEC_GZIP, data) == b"one two"


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_truncated_input_is_an_error(codec: int) -> None:
    out = c.compress(codec, os.urandom(70_000))
    with pytest.raises(Exception):  # noqa: B017 - each library has its own error type
        c.decompress(codec, out[: len(out) // 2])


def test_snappy_truncated_xerial_header_and_chunk() -> None:
    out = c.compress(c.CODEC_SNAPPY, b"x" * 1000)
    with pytest.raises(ValueError, match="truncated xerial snappy header"):
        c.decompress(c.CODEC_SNAPPY, out[:12])
    with pytest.raises(ValueError, match="truncated xerial snappy chunk"):
        c.decompress(c.CODEC_SNAPPY, out[:-3])


def test_any_buffer_is_accepted() -> None:
    data = bytearray(b"abc" * 5000)
    for codec in (1, 2, 3, 4):
        for src in (data, memoryview(data), memoryview(bytes(data))[100:]):
            assert c.decompress(codec, c.compress(codec, src)) == bytes(src)


def test_unknown_codec() -> None:
    with pytest.raises(ValueError, match="unknown compression codec 7; expected 1..4"):
        c.compress(7, b"x")
    with pytest.raises(ValueError, match="unknown compression codec 0; expected 1..4"):
        c.decompress(0, b"x")


@pytest.mark.parametrize(
    "codec,module,extra",
    [(c.CODEC_SNAPPY, "cramjam", "snappy"), (c.CODEC_ZSTD, "zstandard", "zstd")],
)
def test_missing_optional_library_names_the_codec_and_the_extra(
    monkeypatch, codec: int, module: str, extra: str
) -> None:
    import sys
    import threading

    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    monkeypatch.setattr(c, "_zstd_local", threading.local())  # no cached compressor
    monkeypatch.setattr(c, "_modules", {})  # no library imported yet
    name = c.NAMES[codec]
    message = rf"{name} compression needs the '{module}' package: pip install cproducer\[{extra}\]"
    for call in (
        lambda: c.compress(codec, b"x"),
        lambda: c.decompress(codec, b"x"),
        lambda: c.check_available(codec),
    ):
        with pytest.raises(UnsupportedCodecError, match=message) as raised:
            call()
        assert isinstance(raised.value, ImportError)  # what it was before, for old callers
    monkeypatch.undo()
    c.check_available(codec)


def test_codec_names_are_case_insensitive_and_errors_list_the_names() -> None:
    assert c.codec_id("GZIP") == 1 and c.codec_id("Zstd") == 4
    with pytest.raises(ValueError, match="none, gzip, snappy, lz4, zstd; got 'lz5'"):
        c.codec_id("lz5")


def test_the_lz4_block_function_is_reached_for_the_builders_c_path() -> None:
    address, fast_reset_address, state_size = c.lz4_block_compress_address()
    assert address != 0 and fast_reset_address != 0 and state_size > 0
    header = c.lz4_frame_header()
    assert header[:4] == b"\x04\x22\x4d\x18" and header[4:6] == b"\x60\x40" and len(header) == 7


def _lz4_blocks_each_alone(frame: bytes) -> list:
    """The blocks of one of our lz4 frames, each decoded with no other block as its dictionary
    (as Java's reader does), as (compressed, its bytes in the frame, decoded) triples."""
    import lz4.block

    assert frame[:4] == b"\x04\x22\x4d\x18"
    blocks, pos = [], 7
    while True:
        (size,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if size == 0:
            return blocks
        n = size & 0x7FFFFFFF
        data = frame[pos : pos + n]
        pos += n
        stored = bool(size & 0x80000000)
        blocks.append((not stored, data, data if stored else lz4.block.decompress(data, 1 << 16)))


def _records_section(values: list, stage: int = 16384) -> bytes:
    """The records section (one lz4 frame) of a batch of ``values`` without keys, built in a
    ``stage``-byte buffer."""
    from cproducer.record.record_batch_builder import RECORD_BATCH_OVERHEAD, RecordBatchBuilder

    b = RecordBatchBuilder(bytearray(stage), c.CODEC_LZ4, 1 << 22)
    for i, value in enumerate(values):
        assert b.try_append(i, None, value) == i
    b.close()
    return bytes(b.buffer())[RECORD_BATCH_OVERHEAD:]


@pytest.mark.parametrize("stage", [16384, 1 << 20])
def test_the_builders_large_lz4_blocks_decode_each_on_their_own(stage: int) -> None:
    """Blocks of 4 KiB or more are compressed after lz4's gap reset (no clearing of the table):
    each one must still decode alone, even right after a block with the same bytes. A 16 KiB
    stage sends each 10 kB value as a block of its own; a 1 MiB stage makes 64 KiB blocks."""
    assert all(c.lz4_gap_reset_addresses())
    value = b"a value repeated in every record of the batch | " * 210
    frame = _records_section([value] * 12, stage)
    blocks = _lz4_blocks_each_alone(frame)
    large = [decoded for compressed, _, decoded in blocks if compressed and len(decoded) >= 4096]
    assert len(large) >= 2 and all(len(d) < 400 * 1024 for d in large)
    assert b"".join(decoded for _, _, decoded in blocks) == c.decompress(c.CODEC_LZ4, frame)
    assert c.decompress(c.CODEC_LZ4, frame).count(value) == 12


def _lz4_one_block(data: bytes, gap: bool) -> bytes:
    """``data`` as one lz4 block from a fresh state: through lz4's gap reset and continue
    function (``gap``) or through its ``_fastReset`` function, called as the builder calls them."""
    import ctypes

    _, fast_reset, state_size = c.lz4_block_compress_address()
    reset, cont = c.lz4_gap_reset_addresses()
    sig = ctypes.CFUNCTYPE(
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
    )
    state = ctypes.create_string_buffer(state_size + 64)  # zeroed: lz4's initialization
    out = ctypes.create_string_buffer(len(data))
    if gap:
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(reset)(ctypes.addressof(state))
    fn = sig(cont if gap else fast_reset)
    n = fn(ctypes.addressof(state), data, ctypes.addressof(out), len(data), len(data) - 1, 1)
    assert n > 0
    return out.raw[:n]


def test_large_lz4_blocks_take_the_gap_reset_only_after_a_block_lz4_halved() -> None:
    """The gap reset's table (5-byte hashes, half the entries) compresses bytes lz4 can hardly
    shrink worse than lz4's ``_fastReset`` function does, and bytes lz4 halves as well or
    better. After a large block that did not shrink to half, the next must be ``_fastReset``'s;
    after one that did, the gap reset's (and here the two differ)."""
    import random

    rnd = random.Random(7)
    words = [
        "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8)) for _ in range(4000)
    ]
    varied = [
        b'{"id": %d, "user": "%s", "text": "%s"}'
        % (i, rnd.choice(words).encode(), " ".join(rnd.sample(words, 30)).encode())
        for i in range(400)
    ]
    repetitive = [
        b'{"id": %d, "event": "page_view", "user_id": %d, "url": "https://example.com/p/%d"}'
        % (i, 1000 + i % 50, i % 20)
        for i in range(2000)
    ]
    for values, halved in ((varied, False), (repetitive, True)):
        blocks = [
            (decoded, ours)
            for compressed, ours, decoded in _lz4_blocks_each_alone(_records_section(values))
            if compressed and len(decoded) >= 4096
        ]
        assert len(blocks) >= 3
        for decoded, ours in blocks[1:]:  # the first follows whatever the state did before
            assert (len(ours) <= len(decoded) // 2) is halved
            assert ours == _lz4_one_block(decoded, gap=halved)
        if halved:
            assert any(_lz4_one_block(d, gap=False) != ours for d, ours in blocks[1:])
        else:
            assert any(_lz4_one_block(d, gap=True) != ours for d, ours in blocks[1:])
