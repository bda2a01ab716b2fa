// Java's KafkaProducer in benchmarks/scaling.py: the workloads of scaling.py's Python clients
// (JavaProducerPeer's keys and values, spread over topics, keyed or not, from several threads,
// at a fixed rate, or many producers at once), measured by the JVM itself as the Python children
// measure themselves.
// Usage: java JavaScalingPeer name=value ...
//   mode=throughput|latency|producers, bootstrap=, topic= (one topic, or the prefix of
//   topics=T topics <topic>-0 ... <topic>-<T-1>), records=, warmup=, value=<bytes>,
//   keys=<distinct keys, 0: no key>, threads=, sample=<every n-th record timed>,
//   seconds=<the measured run stops sending after this long>, fractions=0.1,0.5,0.9 and
//   rate_seconds= (latency mode), producers=, idle=<seconds> (producers mode);
//   p.<setting>=<value>: further producer settings.
// Record i goes to topic i % T with key (i / T) % keys, as in scaling.py. Prints one line:
//   RESULT {...}
// cpu_s is the process's CPU time (user + system, every thread); the RSS figures come from
// /proc/self/status, the peak (VmHWM) reset after the warm-up by writing 5 to
// /proc/self/clear_refs, as the Python clients do. Latencies are in milliseconds, from just before
// send() to the callback, for every sample-th record.
import java.io.FileWriter;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaScalingPeer {
    static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    final Map<String, String> opts = new HashMap<>();
    final Properties props = new Properties();
    String[] topics;
    byte[][] keys;
    byte[] value;
    int threads;
    int sample;

    public static void main(String[] args) throws Exception {
        new JavaScalingPeer().run(args);
    }

    void run(String[] args) throws Exception {
        for (String arg : args) {
            int eq = arg.indexOf('=');
            String name = arg.substring(0, eq), val = arg.substring(eq + 1);
            if (name.startsWith("p.")) props.put(name.substring(2), val);
            else opts.put(name, val);
        }
        props.putIfAbsent(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, opts.get("bootstrap"));
        props.putIfAbsent(ProducerConfig.ACKS_CONFIG, "all");
        props.putIfAbsent(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        props.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.putIfAbsent(ProducerConfig.BATCH_SIZE_CONFIG, "16384");
        int ntopics = Integer.parseInt(opts.getOrDefault("topics", "1"));
        String topic = opts.get("topic");
        topics = new String[ntopics];
        for (int j = 0; j < ntopics; j++) topics[j] = ntopics == 1 ? topic : topic + "-" + j;
        int nkeys = Integer.parseInt(opts.getOrDefault("keys", "1000"));
        keys = new byte[nkeys][];
        for (int i = 0; i < nkeys; i++) {
            keys[i] = String.format("key-%06d", i).getBytes(StandardCharsets.US_ASCII);
        }
        value = new byte[Integer.parseInt(opts.getOrDefault("value", "100"))];
        Arrays.fill(value, (byte) 'v');
        threads = Integer.parseInt(opts.getOrDefault("threads", "1"));
        sample = Integer.parseInt(opts.getOrDefault("sample", "16"));
        String mode = opts.getOrDefault("mode", "throughput");
        String result = mode.equals("producers") ? producers() : sends(mode.equals("latency"));
        System.out.println("RESULT " + result);
    }

    /** Warm up, then one measured run at full speed; in latency mode then a fixed-rate run at
     * each fraction of the rate that run reached. */
    String sends(boolean latency) throws Exception {
        long records = Long.parseLong(opts.get("records"));
        long warmup = Long.parseLong(opts.getOrDefault("warmup", "20000"));
        double seconds = Double.parseDouble(opts.getOrDefault("seconds", "60"));
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
            measure(producer, warmup, 0, seconds);
            long created = statusKb("VmRSS");
            try (FileWriter w = new FileWriter("/proc/self/clear_refs")) {
                w.write("5");
            }
            String max = measure(producer, records, 0, seconds);
            if (!latency) return "{" + max + ", \"rss_created_mb\": " + mb(created) + "}";
            double rate = lastDelivered / lastWall;
            double rateSeconds = Double.parseDouble(opts.getOrDefault("rate_seconds", "3"));
            List<String> fixed = new ArrayList<>();
            for (String f : opts.getOrDefault("fractions", "0.1,0.5,0.9").split(",")) {
                double target = rate * Double.parseDouble(f);
                long count = Math.max(1, (long) (target * rateSeconds));
                fixed.add("{\"fraction\": " + f + ", \"target_rate\": " + target + ", "
                        + measure(producer, count, target, seconds + rateSeconds) + "}");
            }
            return "{" + max + ", \"rss_created_mb\": " + mb(created) + ", \"fixed\": ["
                    + String.join(", ", fixed) + "]}";
        }
    }

    long lastDelivered;
    double lastWall;

    /** {@code count} records from {@code threads} threads (thread t sends records t, t + threads,
     * ...), at {@code rate} records a second in all (0: as fast as they go), until
     * {@code seconds} have passed; then flush(). Its figures as JSON fields. */
    String measure(KafkaProducer<byte[], byte[]> producer, long count, double rate, double seconds)
            throws Exception {
        AtomicLong delivered = new AtomicLong();
        AtomicLong sent = new AtomicLong();
        long[] lat = new long[(int) Math.min(Integer.MAX_VALUE - 8, count / sample + threads + 1)];
        AtomicInteger nlat = new AtomicInteger();
        Callback counted = (md, exc) -> {
            if (exc == null) delivered.incrementAndGet();
        };
        long cpu0 = OS.getProcessCpuTime();
        long t0 = System.nanoTime();
        long deadline = t0 + (long) (seconds * 1e9);
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int first = t;
            workers[t] = new Thread(() -> {
                long mine = 0;
                double perNs = rate / threads / 1e9;
                for (long i = first; i < count; i += threads, mine++) {
                    if ((mine & 1023) == 0 && System.nanoTime() > deadline) break;
                    if (rate > 0) {
                        while (true) {
                            long due = (long) ((System.nanoTime() - t0) * perNs) + 1;
                            if (mine < due) break;
                            java.util.concurrent.locks.LockSupport.parkNanos(500_000);
                        }
                    }
                    String topic = topics[(int) (i % topics.length)];
                    byte[] key = keys.length == 0 ? null : keys[(int) ((i / topics.length) % keys.length)];
                    Callback cb = counted;
                    if (i % sample == 0) {
                        long start = System.nanoTime();
                        cb = (md, exc) -> {
                            if (exc == null) {
                                delivered.incrementAndGet();
                                int k = nlat.getAndIncrement();
                                if (k < lat.length) lat[k] = System.nanoTime() - start;
                            }
                        };
                    }
                    producer.send(new ProducerRecord<>(topic, key, value), cb);
                    sent.incrementAndGet();
                }
            });
            workers[t].start();
        }
        for (Thread w : workers) w.join();
        producer.flush();
        double wall = (System.nanoTime() - t0) / 1e9;
        double cpu = (OS.getProcessCpuTime() - cpu0) / 1e9;
        lastDelivered = delivered.get();
        lastWall = wall;
        long[] got = Arrays.copyOf(lat, Math.min(nlat.get(), lat.length));
        Arrays.sort(got);
        return String.format(Locale.ROOT,
                "\"sent\": %d, \"delivered\": %d, \"wall_s\": %.6f, \"cpu_s\": %.6f, \"rss_peak_mb\": %s, "
                        + "\"rss_after_mb\": %s, \"lat_samples\": %d, \"lat_p50_ms\": %s, "
                        + "\"lat_p99_ms\": %s, \"lat_p999_ms\": %s",
                sent.get(), lastDelivered, wall, cpu, mb(statusKb("VmHWM")), mb(statusKb("VmRSS")),
                got.length, pct(got, 0.5), pct(got, 0.99), pct(got, 0.999));
    }

    /** N producers, each connected by one record acknowledged; then their memory, threads and
     * CPU over {@code idle} seconds of doing nothing. */
    String producers() throws Exception {
        int n = Integer.parseInt(opts.get("producers"));
        double idle = Double.parseDouble(opts.getOrDefault("idle", "5"));
        // the JVM's own threads and memory before the first producer, the class loading of one
        // producer excluded: a first producer created and closed
        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer()).close();
        System.gc();
        long rss0 = statusKb("VmRSS");
        int threads0 = threadCount();
        List<KafkaProducer<byte[], byte[]>> all = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                KafkaProducer<byte[], byte[]> p =
                        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
                all.add(p);
                byte[] key = keys.length == 0 ? null : keys[i % keys.length];
                p.send(new ProducerRecord<>(topics[i % topics.length], key, value)).get();
            }
            System.gc(); // as before the first: the collector's garbage is not the producers'
            long rss1 = statusKb("VmRSS");
            int threads1 = threadCount();
            long cpu0 = OS.getProcessCpuTime();
            long t0 = System.nanoTime();
            Thread.sleep((long) (idle * 1000));
            double wall = (System.nanoTime() - t0) / 1e9;
            double cpu = (OS.getProcessCpuTime() - cpu0) / 1e9;
            return String.format(Locale.ROOT,
                    "{\"producers\": %d, \"rss_before_mb\": %s, \"rss_after_mb\": %s, "
                            + "\"rss_peak_mb\": %s, \"threads_before\": %d, \"threads_after\": %d, "
                            + "\"idle_wall_s\": %.6f, \"idle_cpu_s\": %.6f}",
                    n, mb(rss0), mb(rss1), mb(statusKb("VmHWM")), threads0, threads1, wall, cpu);
        } finally {
            for (KafkaProducer<byte[], byte[]> p : all) p.close();
        }
    }

    static String pct(long[] sorted, double q) {
        if (sorted.length == 0) return "null";
        int i = (int) Math.min(sorted.length - 1, Math.floor(q * sorted.length));
        return String.format(Locale.ROOT, "%.4f", sorted[i] / 1e6);
    }

    static String mb(long kb) {
        return String.format(Locale.ROOT, "%.3f", kb / 1024.0);
    }

    static int threadCount() {
        String[] tasks = new java.io.File("/proc/self/task").list();
        return tasks == null ? 0 : tasks.length;
    }

    static long statusKb(String field) throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith(field + ":")) return Long.parseLong(line.split("\\s+")[1]);
        }
        return 0;
    }
}
