// Java's KafkaProducer as a load in the cluster-fault tests (tests/tools/seq_load.py): records
// carrying their sequence number, sent at a steady rate until stdin closes, every outcome printed.
// Usage: java SeqProducer <bootstrap> <topic> <partitions, 0: unkeyed> <records/s, 0: no cap>
//            [key=value ...]   (key=value: producer settings)
// Record n: value "value-<n>", header seq=<n>, partition n % partitions (or none). Lines, one per
// event, times from System.nanoTime() (CLOCK_MONOTONIC on Linux, as Python's time.monotonic_ns):
//   S <seq> <ns>                         send() took the record (the time it was called)
//   X <seq> <ns> <exception>             send() refused it
//   A <seq> <ns> <partition> <offset>    acknowledged
//   E <seq> <ns> <exception>             failed
//   D                                    stdin closed, flush() and close() done
import java.io.BufferedOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class SeqProducer {
    public static void main(String[] args) throws Exception {
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        double rate = Double.parseDouble(args[3]);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        for (int i = 4; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false, "US-ASCII");
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (Exception e) {
                // closed either way
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        // the reader waits on acknowledgements as they come (a stall ends at the first one)
        Thread flusher = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
                synchronized (out) {
                    out.flush();
                }
            }
        });
        flusher.setDaemon(true);
        flusher.start();
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
            long start = System.nanoTime();
            for (long seq = 0; !stop.get(); seq++) {
                if (rate > 0) {
                    long due = start + (long) (seq * 1e9 / rate);
                    long wait = due - System.nanoTime();
                    if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                byte[] seqBytes = Long.toString(seq).getBytes(StandardCharsets.US_ASCII);
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(
                        topic, partitions > 0 ? (int) (seq % partitions) : null, null,
                        ("value-" + seq).getBytes(StandardCharsets.US_ASCII));
                record.headers().add("seq", seqBytes);
                final long s = seq;
                long sentAt = System.nanoTime();
                try {
                    producer.send(record, (md, exc) -> {
                        long now = System.nanoTime();
                        synchronized (out) {
                            if (exc == null) {
                                out.println("A " + s + " " + now + " " + md.partition() + " " + md.offset());
                            } else {
                                out.println("E " + s + " " + now + " " + oneLine(exc));
                            }
                        }
                    });
                    synchronized (out) {
                        out.println("S " + s + " " + sentAt);
                    }
                } catch (Exception exc) {
                    synchronized (out) {
                        out.println("X " + s + " " + System.nanoTime() + " " + oneLine(exc));
                    }
                }
            }
            producer.flush();
        }
        synchronized (out) {
            out.println("D");
            out.flush();
        }
    }

    static String oneLine(Throwable exc) {
        return (exc.getClass().getSimpleName() + ": " + exc.getMessage()).replace('\n', ' ');
    }
}
