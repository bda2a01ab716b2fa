"""Whole batches read on the JVM: java.util.zip.CRC32C checks the CRC, the codec libraries the Java
client uses decompress the records section (GZIPInputStream, xerial SnappyInputStream, lz4-java
block by block as Kafka's Lz4BlockInputStream, zstd-jni's ZstdInputStreamNoFinalizer), and the
records are walked with Kafka's varint rules (``DefaultRecord.readFrom``), header keys decoded
as Java Strings. (kafka-clients itself is not needed: the codec jars come with pyspark.)
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from cproducer.record.record_batch_builder import (
    RecordBatchBuilder,
    estimate_size_in_bytes_upper_bound,
)

JAVA_SOURCE = r"""
import java.io.*;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.Arrays;
import java.util.zip.CRC32C;
import java.util.zip.GZIPInputStream;
import com.github.luben.zstd.ZstdInputStreamNoFinalizer;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;
import net.jpountz.xxhash.XXHashFactory;
import org.xerial.snappy.SnappyInputStream;

public class BatchCheck {
    public static void main(String[] args) throws Exception {
        for (int i = 0; i + 1 < args.length; i += 2) {
            byte[] batch = Files.readAllBytes(Paths.get(args[i]));
            Path dst = Paths.get(args[i + 1]);
            try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(dst))) {
                dump(batch, out);
            }
        }
    }

    static void dump(byte[] bytes, PrintWriter out) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        if (b.getInt(8) != bytes.length - 12) throw new IOException("bad batchLength");
        if (b.get(16) != 2) throw new IOException("magic is not 2");
        CRC32C crc = new CRC32C();
        crc.update(bytes, 21, bytes.length - 21);
        if (crc.getValue() != (b.getInt(17) & 0xffffffffL)) throw new IOException("CRC mismatch");
        short attributes = b.getShort(21);
        long baseTimestamp = b.getLong(27);
        int count = b.getInt(57);
        out.printf("batch %d %d %d %d %d %d %d %d %d %d %d%n", b.getLong(0), b.getInt(12),
            attributes & 7, (attributes >> 4) & 1, b.getInt(23), baseTimestamp, b.getLong(35),
            b.getLong(43), b.getShort(51), b.getInt(53), count);
        byte[] body = decompress(attributes & 7, Arrays.copyOfRange(bytes, 61, bytes.length));
        ByteBuffer r = ByteBuffer.wrap(body);
        for (int i = 0; i < count; i++) {
            int size = readVarint(r);
            int start = r.position();
            r.get();  // attributes
            long timestampDelta = readVarlong(r);
            int offsetDelta = readVarint(r);
            String key = hex(r), value = hex(r);
            int headers = readVarint(r);
            StringBuilder h = new StringBuilder();
            for (int j = 0; j < headers; j++) {
                int n = readVarint(r);
                if (n < 0) throw new IOException("null header key");
                byte[] k = new byte[n];
                r.get(k);
                String s = new String(k, StandardCharsets.UTF_8);
                h.append(' ').append(hex(s.getBytes(StandardCharsets.UTF_8)));
                h.append('=').append(hex(r));
            }
            if (r.position() - start != size) throw new IOException("record length mismatch");
            out.printf("record %d %d %s %s %d%s%n", offsetDelta, baseTimestamp + timestampDelta,
                key, value, headers, h);
        }
        if (r.hasRemaining()) throw new IOException("bytes after the last record");
    }

    static int readVarint(ByteBuffer r) throws IOException {
        int value = 0, i = 0, b;
        while (((b = r.get()) & 0x80) != 0) {
            value |= (b & 0x7f) << i;
            i += 7;
            if (i > 28) throw new IOException("varint too long");
        }
        value |= b << i;
        return (value >>> 1) ^ -(value & 1);
    }

    static long readVarlong(ByteBuffer r) throws IOException {
        long value = 0L;
        int i = 0;
        long b;
        while (((b = r.get()) & 0x80) != 0) {
            value |= (b & 0x7f) << i;
            i += 7;
            if (i > 63) throw new IOException("varlong too long");
        }
        value |= b << i;
        return (value >>> 1) ^ -(value & 1);
    }

    static String hex(ByteBuffer r) throws IOException {
        int n = readVarint(r);
        if (n < 0) return "-";
        byte[] v = new byte[n];
        r.get(v);
        return hex(v);
    }

    static String hex(byte[] v) {
        StringBuilder s = new StringBuilder("x");
        for (byte x : v) s.append(String.format("%02x", x & 0xff));
        return s.toString();
    }

    static byte[] decompress(int codec, byte[] in) throws IOException {
        switch (codec) {
            case 0: return in;
            case 1: return drain(new GZIPInputStream(new ByteArrayInputStream(in)));
            case 2: return drain(new SnappyInputStream(new ByteArrayInputStream(in)));
            case 3: return lz4(in);
            case 4: return drain(new ZstdInputStreamNoFinalizer(new ByteArrayInputStream(in)));
            default: throw new IOException("codec " + codec);
        }
    }

    static byte[] drain(InputStream s) throws IOException {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        byte[] buf = new byte[65536];
        int n;
        while ((n = s.read(buf)) > 0) o.write(buf, 0, n);
        return o.toByteArray();
    }

    static int le32(byte[] b, int p) {
        return (b[p] & 0xff) | (b[p + 1] & 0xff) << 8 | (b[p + 2] & 0xff) << 16
            | (b[p + 3] & 0xff) << 24;
    }

    // LZ4 frame, every block decoded on its own (independent blocks, as Kafka requires)
    static byte[] lz4(byte[] in) throws IOException {
        if (le32(in, 0) != 0x184D2204) throw new IOException("bad LZ4 magic");
        int flg = in[4] & 0xff, bd = in[5] & 0xff;
        if ((flg >> 6) != 1 || (flg & 0x20) == 0) {
            throw new IOException("not independent LZ4 blocks");
        }
        int pos = 6 + ((flg & 0x08) != 0 ? 8 : 0);
        int hc = (XXHashFactory.fastestInstance().hash32().hash(in, 4, pos - 4, 0) >> 8) & 0xff;
        if ((in[pos] & 0xff) != hc) throw new IOException("bad LZ4 header checksum");
        pos += 1;
        int maxBlock = 1 << (2 * ((bd >> 4) & 7) + 8);
        LZ4SafeDecompressor dec = LZ4Factory.fastestInstance().safeDecompressor();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] block = new byte[maxBlock];
        while (true) {
            int size = le32(in, pos);
            pos += 4;
            if (size == 0) break;
            boolean raw = (size & 0x80000000) != 0;
            size &= 0x7fffffff;
            if (raw) out.write(in, pos, size);
            else out.write(block, 0, dec.decompress(in, pos, size, block, 0, maxBlock));
            pos += size;
            if ((flg & 0x10) != 0) pos += 4;
        }
        return out.toByteArray();
    }
}
"""


@pytest.fixture(scope="module")
def java_classpath(tmp_path_factory) -> str:
    import pyspark

    jars = [
        str(p)
        for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")
        if p.name.startswith(("lz4-java", "snappy-java", "zstd-jni"))
    ]
    assert len(jars) == 3, "expected the lz4/snappy/zstd jars that come with pyspark"
    javac = shutil.which("javac")
    assert javac, "javac (Java 17) is needed"
    out = tmp_path_factory.mktemp("batchcheck")
    (out / "BatchCheck.java").write_text(JAVA_SOURCE)
    cp = os.pathsep.join(jars)
    subprocess.run(
        [javac, "-cp", cp, "-d", str(out), str(out / "BatchCheck.java")],
        check=True,
        capture_output=True,
    )
    return os.pathsep.join([str(out), cp])


def _hex(data) -> str:
    return "-" if data is None else "x" + bytes(data).hex()


def expected_dump(records, codec, pid, epoch, seq, txn) -> list:
    base = records[0][0]
    lines = [
        f"batch 0 -1 {codec} {int(txn)} {len(records) - 1} {base} "
        f"{max(r[0] for r in records)} {pid} {epoch} {seq} {len(records)}"
    ]
    for i, (ts, key, value, headers) in enumerate(records):
        hs = "".join(f" {_hex(k.encode())}={_hex(v)}" for k, v in headers)
        lines.append(f"record {i} {ts} {_hex(key)} {_hex(value)} {len(headers)}{hs}")
    return lines


def make_records(seed: int, n: int) -> list:
    rnd = random.Random(seed)
    now = 1_700_000_000_000
    out = []
    for i in range(n):
        key = None if i % 6 == 0 else rnd.randbytes(rnd.randint(0, 40))
        value = None if i % 9 == 4 else (b"text %d " % i) * rnd.randint(0, 40)
        if i % 50 == 7:
            value = rnd.randbytes(70_000)  # several lz4 blocks / snappy chunks
        headers = [
            (rnd.choice(["trace", "ключ", "ü-日本", ""]), rnd.choice([None, b"", b"v%d" % i]))
            for _ in range(rnd.randint(0, 4))
        ]
        out.append((now + rnd.randint(-10_000, 10_000), key, value, headers))
    return out


def test_java_reads_our_batches_for_every_codec(java_classpath: str, tmp_path: Path) -> None:
    args, wanted = [], {}
    for codec in range(5):
        records = make_records(codec, 300)
        state = (1000 + codec, codec, 10 * codec, codec % 2 == 1)
        size = sum(estimate_size_in_bytes_upper_bound(k, v, h) for _, k, v, h in records)
        b = RecordBatchBuilder(bytearray(size), codec, 2 * size)
        for ts, key, value, headers in records:
            assert b.try_append(ts, key, value, headers) >= 0
        b.close()
        b.set_producer_state(*state)  # after close: header and CRC rewritten in place
        src, dst = tmp_path / f"batch{codec}.bin", tmp_path / f"dump{codec}.txt"
        src.write_bytes(bytes(b.buffer()))
        args += [str(src), str(dst)]
        wanted[dst] = expected_dump(records, codec, *state)
    proc = subprocess.run(
        ["java", "-cp", java_classpath, "BatchCheck", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    for dst, lines in wanted.items():
        assert dst.read_text().splitlines() == lines


def test_java_rejects_a_corrupted_batch(java_classpath: str, tmp_path: Path) -> None:
    """The CRC check on the JVM is real: one flipped byte is refused."""
    b = RecordBatchBuilder(bytearray(1000))
    b.try_append(1, b"k", b"value")
    b.close()
    data = bytearray(b.buffer())
    data[-3] ^= 0x01
    src = tmp_path / "bad.bin"
    src.write_bytes(bytes(data))
    proc = subprocess.run(
        ["java", "-cp", java_classpath, "BatchCheck", str(src), str(tmp_path / "o.txt")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0 and "CRC mismatch" in proc.stderr
