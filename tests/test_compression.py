"""Codecs: written as Java writes them (xerial snappy, independent-block lz4, gzip stream)."""

from __future__ import annotations

import gzip
import os
import struct

import lz4.frame
import pytest

from cproducer import compression as c


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
