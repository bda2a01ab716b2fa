"""CRC-32C: RFC 3720 vectors, equality with the `crc32c` package, both paths, any buffer."""

from __future__ import annotations

import os
import random

import crc32c as reference
import numpy as np
import pytest

from cproducer.utils.crc32c import HAVE_HW, crc32c, crc32c_hw, crc32c_table

PATHS = [crc32c, crc32c_table] + ([crc32c_hw] if HAVE_HW else [])


@pytest.mark.parametrize("fn", PATHS)
def test_rfc3720_vectors(fn) -> None:
    assert fn(bytes(32)) == 0x8A9136AA
    assert fn(b"\xff" * 32) == 0x62A8AB43
    assert fn(bytes(range(32))) == 0x46DD794E
    assert fn(b"") == 0


@pytest.mark.parametrize("fn", PATHS)
def test_random_buffers_match_reference(fn) -> None:
    rnd = random.Random(7)
    sizes = [0, 1, 7, 8, 9, 255, 767, 768, 769, 24575, 24576, 24577, 65536, 100_000]
    sizes += [rnd.randrange(0, 100_000) for _ in range(60)]
    for n in sizes:
        data = os.urandom(n)
        assert fn(data) == reference.crc32c(data), n
        # unaligned start, chained continuation
        cut = rnd.randrange(0, n + 1)
        view = memoryview(data)
        assert fn(view[cut:], fn(view[:cut])) == reference.crc32c(data)


def test_every_buffer_type_without_copy() -> None:
    data = os.urandom(5000)
    expected = reference.crc32c(data)
    assert crc32c(bytearray(data)) == expected
    assert crc32c(memoryview(data)) == expected
    assert crc32c(np.frombuffer(data, dtype=np.uint8)) == expected
    assert crc32c(np.frombuffer(data[:4000], dtype=np.uint32)) == reference.crc32c(data[:4000])


def test_bad_input() -> None:
    with pytest.raises(TypeError, match="data must be a bytes-like object"):
        crc32c("text")
    with pytest.raises(TypeError, match="got int"):
        crc32c(5)
    with pytest.raises(ValueError, match="C-contiguous"):
        crc32c(memoryview(bytes(100))[::2])
    with pytest.raises(ValueError, match="crc must be in"):
        crc32c(b"x", -1)


def test_hw_path_reports_absence() -> None:
    if HAVE_HW:
        assert crc32c_hw(b"abc") == reference.crc32c(b"abc")
    else:
        with pytest.raises(RuntimeError, match="SSE4.2"):
            crc32c_hw(b"abc")
