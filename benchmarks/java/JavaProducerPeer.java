// Java's KafkaProducer in benchmarks/compare_peers.py: the peers' workload (the same keys and
// values), measured by the JVM itself as the Python clients measure themselves.
// Usage: java JavaProducerPeer <bootstrap> <topic> <records> <warm-up records> <value size>
//            <buffer.memory> <records per transaction, 0: none> [key=value ...]
//   (key=value: further producer settings)
// send() with a Callback counting the acknowledged records, then flush(); first the warm-up
// (connections, metadata, the JIT's first compilations), then the measured run. Prints one line:
//   RESULT {"delivered": n, "wall_s": ..., "cpu_s": ..., "rss_created_mb": ..., ...}
// cpu_s is the process's CPU time (user + system, every thread: the sender, the JIT compilers,
// the collector); the RSS figures come from /proc/self/status, and the peak (VmHWM) is reset
// after the warm-up by writing 5 to /proc/self/clear_refs, as the Python clients do.
import java.io.FileWriter;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaProducerPeer {
    static final int DISTINCT_KEYS = 1000;

    public static void main(String[] args) throws Exception {
        String topic = args[1];
        long records = Long.parseLong(args[2]);
        long warmup = Long.parseLong(args[3]);
        int valueSize = Integer.parseInt(args[4]);
        long txnRecords = Long.parseLong(args[6]);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, "16384");
        props.put(ProducerConfig.BUFFER_MEMORY_CONFIG, args[5]);
        if (txnRecords > 0) {
            props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "peers-java-" + ProcessHandle.current().pid());
        }
        for (int i = 7; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        // the keys and the value of the Python clients: b"key-000000" ... b"key-000999", b"v" * size
        byte[][] keys = new byte[DISTINCT_KEYS][];
        for (int i = 0; i < DISTINCT_KEYS; i++) {
            keys[i] = String.format("key-%06d", i).getBytes(StandardCharsets.US_ASCII);
        }
        byte[] value = new byte[valueSize];
        Arrays.fill(value, (byte) 'v');
        AtomicLong delivered = new AtomicLong();
        Callback onCompletion = (metadata, exception) -> {
            if (exception == null) delivered.incrementAndGet();
        };
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
            if (txnRecords > 0) producer.initTransactions();
            produce(producer, topic, keys, value, warmup, txnRecords, onCompletion, delivered);
            long created = statusKb("VmRSS");
            try (FileWriter w = new FileWriter("/proc/self/clear_refs")) {
                w.write("5");
            }
            long cpu0 = os.getProcessCpuTime();
            long t0 = System.nanoTime();
            long n = produce(producer, topic, keys, value, records, txnRecords, onCompletion, delivered);
            double wall = (System.nanoTime() - t0) / 1e9;
            double cpu = (os.getProcessCpuTime() - cpu0) / 1e9;
            System.out.printf(
                    "RESULT {\"delivered\": %d, \"wall_s\": %.6f, \"cpu_s\": %.6f, \"rss_created_mb\": %.3f, "
                            + "\"rss_peak_mb\": %.3f, \"rss_after_mb\": %.3f}%n",
                    n, wall, cpu, created / 1024.0, statusKb("VmHWM") / 1024.0, statusKb("VmRSS") / 1024.0);
        }
    }

    /** {@code count} records, a transaction committed every {@code txnRecords} (0: none), then
     * flush(); the records acknowledged. */
    static long produce(KafkaProducer<byte[], byte[]> producer, String topic, byte[][] keys, byte[] value,
            long count, long txnRecords, Callback onCompletion, AtomicLong delivered) {
        delivered.set(0);
        for (long i = 0; i < count; i++) {
            if (txnRecords > 0 && i % txnRecords == 0) {
                if (i > 0) producer.commitTransaction();
                producer.beginTransaction();
            }
            producer.send(new ProducerRecord<>(topic, keys[(int) (i % DISTINCT_KEYS)], value), onCompletion);
        }
        if (txnRecords > 0 && count > 0) producer.commitTransaction();
        producer.flush();
        return delivered.get();
    }

    static long statusKb(String field) throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith(field + ":")) return Long.parseLong(line.split("\\s+")[1]);
        }
        return 0;
    }
}
