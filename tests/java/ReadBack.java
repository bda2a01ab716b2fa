// Reads a topic back with Java's KafkaConsumer (assign() from offset 0, no group), for the tests:
// what Java consumers, the most common readers of a topic, make of the bytes cproducer wrote.
// Usage: java ReadBack <bootstrap> <topic> <partitions> <expected> <timeout ms> [key=value ...]
//   (key=value: consumer settings, e.g. isolation.level=read_committed, security.protocol=...)
// Prints one line per record, tab-separated:
//   partition offset timestamp timestampType key value headers
// key/value base64 or "-" for null; headers "name:base64" (or "name:-") joined by ",".
// Stops once <expected> records were read and a further second brought nothing, or at the timeout.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ReadBack {
    public static void main(String[] args) {
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        long expected = Long.parseLong(args[3]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[4]);
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        for (int i = 5; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        Base64.Encoder b64 = Base64.getEncoder();
        StringBuilder out = new StringBuilder();
        long seen = 0;
        long settleUntil = Long.MAX_VALUE;
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            while (System.currentTimeMillis() < Math.min(deadline, settleUntil)) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    out.setLength(0);
                    out.append(r.partition()).append('\t').append(r.offset()).append('\t')
                       .append(r.timestamp()).append('\t').append(r.timestampType().name).append('\t')
                       .append(r.key() == null ? "-" : b64.encodeToString(r.key())).append('\t')
                       .append(r.value() == null ? "-" : b64.encodeToString(r.value())).append('\t');
                    boolean first = true;
                    for (Header h : r.headers()) {
                        if (!first) out.append(',');
                        first = false;
                        out.append(b64.encodeToString(h.key().getBytes(java.nio.charset.StandardCharsets.UTF_8)))
                           .append(':').append(h.value() == null ? "-" : b64.encodeToString(h.value()));
                    }
                    System.out.println(out);
                    seen++;
                }
                if (seen >= expected && settleUntil == Long.MAX_VALUE) {
                    settleUntil = System.currentTimeMillis() + 1000;
                }
            }
        }
        System.out.flush();
    }
}
