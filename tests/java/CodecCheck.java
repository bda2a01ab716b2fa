// Decodes a compressed records section the way the Java Kafka client's decompressors do, so the
// tests can check that Java consumers read what cproducer writes.
//   lz4:    every block decompressed on its own into a buffer of the frame's declared maximum
//           block size (as Kafka's Lz4BlockInputStream does); linked blocks would fail here.
//   snappy: org.xerial.snappy.SnappyInputStream (what Kafka uses).
//   zstd:   com.github.luben.zstd.ZstdInputStream.
//   gzip:   java.util.zip.GZIPInputStream.
// Usage: java CodecCheck <codec> <in> <out>
import java.io.*;
import java.nio.file.*;

public class CodecCheck {
    public static void main(String[] args) throws Exception {
        byte[] in = Files.readAllBytes(Paths.get(args[1]));
        byte[] out;
        switch (args[0]) {
            case "lz4": out = lz4(in); break;
            case "snappy": out = drain(new org.xerial.snappy.SnappyInputStream(new ByteArrayInputStream(in))); break;
            case "zstd": out = drain(new com.github.luben.zstd.ZstdInputStream(new ByteArrayInputStream(in))); break;
            case "gzip": out = drain(new java.util.zip.GZIPInputStream(new ByteArrayInputStream(in))); break;
            default: throw new IllegalArgumentException(args[0]);
        }
        Files.write(Paths.get(args[2]), out);
    }

    static byte[] drain(InputStream s) throws IOException {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        byte[] buf = new byte[65536];
        int n;
        while ((n = s.read(buf)) > 0) o.write(buf, 0, n);
        return o.toByteArray();
    }

    static int le32(byte[] b, int p) {
        return (b[p] & 0xff) | (b[p + 1] & 0xff) << 8 | (b[p + 2] & 0xff) << 16 | (b[p + 3] & 0xff) << 24;
    }

    static byte[] lz4(byte[] in) throws IOException {
        if (le32(in, 0) != 0x184D2204) throw new IOException("bad LZ4 magic");
        int flg = in[4] & 0xff, bd = in[5] & 0xff;
        if ((flg >> 6) != 1) throw new IOException("LZ4 version must be 1");
        if ((flg & 0x20) == 0) throw new IOException("blocks are linked: Kafka's Java reader decodes blocks independently");
        int pos = 6 + ((flg & 0x08) != 0 ? 8 : 0);
        int hc = in[pos] & 0xff;
        int expected = (net.jpountz.xxhash.XXHashFactory.fastestInstance().hash32()
                .hash(in, 4, pos - 4, 0) >> 8) & 0xff;
        if (hc != expected) throw new IOException("bad LZ4 header checksum");
        pos += 1;
        int maxBlock = 1 << (2 * ((bd >> 4) & 7) + 8);
        net.jpountz.lz4.LZ4SafeDecompressor dec = net.jpountz.lz4.LZ4Factory.fastestInstance().safeDecompressor();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] block = new byte[maxBlock];
        while (true) {
            int size = le32(in, pos);
            pos += 4;
            if (size == 0) break;
            boolean raw = (size & 0x80000000) != 0;
            size &= 0x7fffffff;
            if (raw) {
                out.write(in, pos, size);
            } else {
                int n = dec.decompress(in, pos, size, block, 0, maxBlock);
                out.write(block, 0, n);
            }
            pos += size;
            if ((flg & 0x10) != 0) pos += 4; // block checksum
        }
        return out.toByteArray();
    }
}
