// Java's KafkaProducer as a transactional load in the cluster-fault tests (tests/tools/faults_txn.py):
// transactions of numbered records, one after the other, until stdin closes; every record's and
// every transaction's outcome printed.
// Usage: java SeqTxnProducer <bootstrap> <topic> <partitions> <records per transaction>
//            <transactions/s, 0: no cap> <abort every, 0: never> [key=value ...]
//            (key=value: producer settings, with transactional.id among them)
// Record n: value "value-<n>", headers seq=<n> and txn=<k> (its transaction), partition
// n % partitions. Transaction k: beginTransaction, its records, then commitTransaction as the
// KafkaProducer javadoc handles it: a TimeoutException is retried by calling commitTransaction
// again; ProducerFencedException, OutOfOrderSequenceException and AuthorizationException are
// fatal (the producer is closed); any other KafkaException is abortable: abortTransaction, and the
// next transaction. Every <abort every>-th transaction (k % n == n - 1) is aborted by the
// application instead, its records flushed first (they reach the log). stdin lines: "H" holds the next transaction between its last send and its
// commit (its records flushed first, so that they are all written), "R" releases it.
// Lines, one per event, times from System.nanoTime() (CLOCK_MONOTONIC, as Python's
// time.monotonic_ns), the record lines as SeqProducer's:
//   I <ns>                        initTransactions done
//   B <txn> <ns> <first seq>      beginTransaction done
//   S <seq> <ns>                  send() took the record
//   X <seq> <ns> <exception>      send() refused it
//   A <seq> <ns> <partition> <offset>   acknowledged by its partition's leader
//   E <seq> <ns> <exception>      failed
//   W <txn> <ns>                  held before the commit (its records flushed)
//   Q <txn> <ns> <exception>      commitTransaction/abortTransaction raised a TimeoutException:
//                                 called again
//   C <txn> <ns>                  committed (commitTransaction returned)
//   N <txn> <ns> <exception>      abortable error (commitTransaction's or a send's): abort follows
//   K <txn> <ns>                  aborted (abortTransaction returned)
//   F <txn> <ns> <exception>      fatal error: the producer is closed, the load ends
//   D                             stdin closed (or fatal error), the producer closed
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class SeqTxnProducer {
    static PrintStream out;

    public static void main(String[] args) throws Exception {
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        int perTxn = Integer.parseInt(args[3]);
        double txnRate = Double.parseDouble(args[4]);
        int abortEvery = Integer.parseInt(args[5]);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        for (int i = 6; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        out = new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false, "US-ASCII");
        AtomicBoolean stop = new AtomicBoolean();
        AtomicBoolean hold = new AtomicBoolean();
        Semaphore release = new Semaphore(0);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.US_ASCII))) {
                for (String line; (line = in.readLine()) != null; ) {
                    if (line.equals("H")) hold.set(true);
                    else if (line.equals("R")) release.release();
                }
            } catch (Exception e) {
                // closed either way
            }
            stop.set(true);
            release.release();
        });
        stdin.setDaemon(true);
        stdin.start();
        // the reader waits on events as they come (a stall ends at the first one)
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
            producer.initTransactions();
            line("I " + System.nanoTime());
            long start = System.nanoTime();
            long seq = 0;
            for (long txn = 0; !stop.get(); txn++) {
                if (txnRate > 0) {
                    long due = start + (long) (txn * 1e9 / txnRate);
                    long wait = due - System.nanoTime();
                    if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                producer.beginTransaction();
                line("B " + txn + " " + System.nanoTime() + " " + seq);
                try {
                    for (int i = 0; i < perTxn; i++, seq++) {
                        send(producer, topic, partitions, seq, txn);
                    }
                    if (abortEvery > 0 && txn % abortEvery == abortEvery - 1) {
                        producer.flush();
                        if (!abort(producer, txn)) break;
                        continue;
                    }
                    if (hold.getAndSet(false)) {
                        producer.flush();
                        line("W " + txn + " " + System.nanoTime());
                        release.acquire();
                    }
                    while (true) {
                        try {
                            producer.commitTransaction();
                            line("C " + txn + " " + System.nanoTime());
                            break;
                        } catch (TimeoutException e) {
                            line("Q " + txn + " " + System.nanoTime() + " " + oneLine(e));
                        }
                    }
                } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException e) {
                    line("F " + txn + " " + System.nanoTime() + " " + oneLine(e));
                    break;
                } catch (KafkaException e) {
                    line("N " + txn + " " + System.nanoTime() + " " + oneLine(e));
                    if (!abort(producer, txn)) break;
                }
            }
            if (!stop.get()) producer.close(java.time.Duration.ZERO);
        }
        line("D");
        synchronized (out) {
            out.flush();
        }
    }

    static void send(KafkaProducer<byte[], byte[]> producer, String topic, int partitions, long seq, long txn) {
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(
                topic, (int) (seq % partitions), null,
                ("value-" + seq).getBytes(StandardCharsets.US_ASCII));
        record.headers().add("seq", Long.toString(seq).getBytes(StandardCharsets.US_ASCII));
        record.headers().add("txn", Long.toString(txn).getBytes(StandardCharsets.US_ASCII));
        final long s = seq;
        long sentAt = System.nanoTime();
        try {
            producer.send(record, (md, exc) -> {
                long now = System.nanoTime();
                if (exc == null) {
                    line("A " + s + " " + now + " " + md.partition() + " " + md.offset());
                } else {
                    line("E " + s + " " + now + " " + oneLine(exc));
                }
            });
            line("S " + s + " " + sentAt);
        } catch (KafkaException exc) {
            line("X " + s + " " + System.nanoTime() + " " + oneLine(exc));
            throw exc;  // the transaction's turn: abortable or fatal
        }
    }

    /** abortTransaction, called again on a TimeoutException; false: a fatal error. */
    static boolean abort(KafkaProducer<byte[], byte[]> producer, long txn) {
        while (true) {
            try {
                producer.abortTransaction();
                line("K " + txn + " " + System.nanoTime());
                return true;
            } catch (TimeoutException e) {
                line("Q " + txn + " " + System.nanoTime() + " " + oneLine(e));
            } catch (KafkaException e) {
                line("F " + txn + " " + System.nanoTime() + " " + oneLine(e));
                return false;
            }
        }
    }

    static void line(String s) {
        synchronized (out) {
            out.println(s);
        }
    }

    static String oneLine(Throwable exc) {
        String s = exc.getClass().getSimpleName() + ": " + exc.getMessage();
        if (exc.getCause() != null && exc.getCause() != exc) {
            s += " (caused by " + exc.getCause().getClass().getSimpleName() + ": " + exc.getCause().getMessage() + ")";
        }
        return s.replace('\n', ' ');
    }
}
