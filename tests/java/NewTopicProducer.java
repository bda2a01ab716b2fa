// Java's KafkaProducer sending to a topic the moment it is created (tests/tools/new_topic_order.py):
// connects and has one record acknowledged on a warm-up topic, says so, waits for a line on stdin
// (the topic was created meanwhile), then sends the records at once and flushes.
// Usage: java NewTopicProducer <bootstrap> <warm-up topic> <topic> <records> <keys> [key=value ...]
//            (key=value: producer settings)
// Record n: value "<n>", key "key-<n % keys>". Lines on stdout:
//   W                                   the warm-up record was acknowledged
//   A <n> <partition> <offset>          record n acknowledged
//   E <n> <exception>                   record n failed
//   T <seconds>                         from the first send to the end of the flush
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class NewTopicProducer {
    public static void main(String[] args) throws Exception {
        String warm = args[1];
        String topic = args[2];
        int records = Integer.parseInt(args[3]);
        int keys = Integer.parseInt(args[4]);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        for (int i = 5; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        String[] outcomes = new String[records];
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.send(new ProducerRecord<>(warm, "warm-up".getBytes(StandardCharsets.US_ASCII))).get();
            System.out.println("W");
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII)).readLine();
            long start = System.nanoTime();
            for (int n = 0; n < records; n++) {
                final int seq = n;
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic,
                        ("key-" + (n % keys)).getBytes(StandardCharsets.US_ASCII),
                        Integer.toString(n).getBytes(StandardCharsets.US_ASCII));
                producer.send(record, (RecordMetadata md, Exception exc) -> {
                    outcomes[seq] = exc == null
                            ? "A " + seq + " " + md.partition() + " " + md.offset()
                            : "E " + seq + " " + exc.toString().replace('\n', ' ');
                });
            }
            producer.flush();
            double seconds = (System.nanoTime() - start) / 1e9;
            StringBuilder out = new StringBuilder();
            for (String line : outcomes) {
                if (line != null) out.append(line).append('\n');
            }
            out.append("T ").append(seconds).append('\n');
            System.out.print(out);
            System.out.flush();
        }
    }
}
