"""Java consumers read what we compress: decoded with the Java libraries Kafka's client uses.

The jars come with pyspark (a test dependency); javac/java 17 are on the machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cproducer.record import compression

HERE = Path(__file__).parent / "java"


@pytest.fixture(scope="module")
def java_classpath(tmp_path_factory) -> str:
    import pyspark

    jars_dir = Path(pyspark.__file__).parent / "jars"
    jars = [
        str(p)
        for p in jars_dir.glob("*.jar")
        if p.name.startswith(("lz4-java", "snappy-java", "zstd-jni"))
    ]
    assert len(jars) == 3, f"expected the lz4/snappy/zstd jars in {jars_dir}"
    javac = shutil.which("javac")
    assert javac, "javac is needed (Java 17 is on the CI machine)"
    out = tmp_path_factory.mktemp("java")
    cp = os.pathsep.join(jars)
    subprocess.run([javac, "-cp", cp, "-d", str(out), str(HERE / "CodecCheck.java")], check=True)
    return os.pathsep.join([str(out), cp])


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_java_decodes_our_records_sections(java_classpath: str, codec: str, tmp_path) -> None:
    # > 64 KiB so lz4 spans several blocks and snappy several 32 KiB chunks
    data = b"".join(
        b"record %06d with some payload | " % i + os.urandom(i % 17) for i in range(9000)
    )
    assert len(data) > 4 * 65536
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(compression.compress(compression.codec_id(codec), data))
    subprocess.run(
        ["java", "-cp", java_classpath, "CodecCheck", codec, str(src), str(dst)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert dst.read_bytes() == data


def test_java_refuses_linked_lz4_blocks(java_classpath: str, tmp_path) -> None:
    """The check itself is real: a linked-block frame (lz4's default) is refused."""
    import lz4.frame

    src = tmp_path / "linked.bin"
    src.write_bytes(lz4.frame.compress(b"x" * 300_000, block_linked=True))
    proc = subprocess.run(
        ["java", "-cp", java_classpath, "CodecCheck", "lz4", str(src), str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0 and "linked" in proc.stderr


@pytest.mark.parametrize(
    "codec,level",
    [("gzip", None), ("snappy", None), ("lz4", None), ("lz4", 12), ("zstd", None)],
)
def test_java_decodes_batches_compressed_as_records_came(
    java_classpath: str, codec: str, level: Any, tmp_path
) -> None:
    """A batch compressed stage by stage (a 4 KiB stage: many blocks, some of random bytes,
    which lz4 stores as they are; values of 8 KiB or more, which lz4 compresses as blocks of
    their own from the caller's memory) is one stream Java reads back whole."""
    from cproducer.record.record_batch_builder import RECORD_BATCH_OVERHEAD, RecordBatchBuilder

    cid = compression.codec_id(codec)
    b = RecordBatchBuilder(
        bytearray(4096), cid, 1 << 22, compression_ratio_estimate=0.01, compression_level=level
    )
    for i in range(2000):
        value = os.urandom(3000) if i % 97 == 5 else b"record %06d with some payload | " % i * 5
        if i % 89 == 7:
            value = b"large value %06d | " % i * 1500 if i % 2 else os.urandom(70000)
        assert b.try_append(i, b"k%d" % i, value) == i
    b.close()
    section = bytes(b.buffer())[RECORD_BATCH_OVERHEAD:]
    expected = compression.decompress(cid, section)
    assert len(expected) == b.uncompressed_size - RECORD_BATCH_OVERHEAD
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(section)
    subprocess.run(
        ["java", "-cp", java_classpath, "CodecCheck", codec, str(src), str(dst)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert dst.read_bytes() == expected
