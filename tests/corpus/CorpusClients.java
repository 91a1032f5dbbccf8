// The Java clients of the capture corpus (tests/corpus/record.py runs this file with Java's
// single-file source launcher against Apache Kafka's class path). Each mode makes one capture's
// traffic and prints one JSON line of what it did, which the recorder keeps as the capture's truth.
//
//   produce BOOTSTRAP TOPIC CODEC MODE   MODE: plain (acks=1, not idempotent), idempotent, transactional
//   group BOOTSTRAP TOPIC PROTOCOL      two consumers in one group (classic or consumer), one leaves
//   admin BOOTSTRAP TOPIC               create, describe, alter configs, list offsets, delete

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class CorpusClients {
    static final int RECORDS = 120; // per produce run: a few batches of each kind, a small capture
    static final int PARTITIONS = 2;

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce" -> produce(args[1], args[2], args[3], args[4]);
            case "group" -> group(args[1], args[2], args[3]);
            case "admin" -> admin(args[1], args[2]);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static String value(int i) {
        // Repetitive text, so that every codec has something to compress.
        return "corpus record " + i + " " + "abcdefghij".repeat(1 + i % 7);
    }

    static void produce(String bootstrap, String topic, String codec, String mode) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "corpus-producer-" + codec + "-" + mode);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "2048");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        boolean transactional = mode.equals("transactional");
        if (mode.equals("plain")) {
            p.put(ProducerConfig.ACKS_CONFIG, "1");
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        } else {
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        }
        if (transactional) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "corpus-txn");
        }
        int committed = 0;
        int aborted = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            if (transactional) {
                producer.initTransactions();
                for (boolean commit : new boolean[] {true, false, true}) {
                    producer.beginTransaction();
                    for (int i = 0; i < RECORDS / 3; i++) {
                        producer.send(new ProducerRecord<>(topic, "k" + i, value(i)));
                    }
                    producer.flush();
                    if (commit) {
                        producer.commitTransaction();
                        committed += RECORDS / 3;
                    } else {
                        producer.abortTransaction();
                        aborted += RECORDS / 3;
                    }
                }
            } else {
                for (int i = 0; i < RECORDS; i++) {
                    producer.send(new ProducerRecord<>(topic, "k" + i, value(i))).get();
                    if (i % 40 == 39) {
                        producer.flush();
                    }
                }
            }
        }
        int read = consumeAll(bootstrap, topic, transactional, "corpus-reader-" + codec + "-" + mode);
        System.out.printf(
                "{\"mode\":\"produce\",\"topic\":\"%s\",\"codec\":\"%s\",\"producer\":\"%s\","
                        + "\"sent\":%d,\"committed\":%d,\"aborted\":%d,\"read\":%d}%n",
                topic, codec, mode, transactional ? committed + aborted : RECORDS, committed, aborted, read);
    }

    /** Every record of the topic's partitions, read without a group (assign and seek). */
    static int consumeAll(String bootstrap, String topic, boolean committedOnly, String clientId) {
        Properties c = consumerProperties(bootstrap, clientId);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, committedOnly ? "read_committed" : "read_uncommitted");
        int read = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) {
                partitions.add(new TopicPartition(topic, i));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline && !reachedEnd(consumer, end)) {
                read += consumer.poll(Duration.ofMillis(200)).count();
            }
        }
        return read;
    }

    static boolean reachedEnd(KafkaConsumer<String, String> consumer, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (consumer.position(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    static Properties consumerProperties(String bootstrap, String clientId) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return c;
    }

    /** Member one joins and reads; member two joins (a rebalance), both read and commit; member
     * two leaves (another rebalance); member one commits again and leaves. */
    static void group(String bootstrap, String topic, String protocol) throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProperties(bootstrap))) {
            for (int i = 0; i < 40; i++) {
                producer.send(new ProducerRecord<>(topic, i % PARTITIONS, "k" + i, value(i)));
            }
        }
        AtomicInteger read = new AtomicInteger();
        AtomicBoolean twoDone = new AtomicBoolean();
        List<String> events = new ArrayList<>();
        Thread one = new Thread(() -> member(bootstrap, topic, protocol, 1, read, twoDone, events));
        one.start();
        waitFor(() -> contains(events, "1 assigned"), 60_000);
        Thread two = new Thread(() -> member(bootstrap, topic, protocol, 2, read, twoDone, events));
        two.start();
        two.join(90_000);
        twoDone.set(true);
        one.join(90_000);
        System.out.printf(
                "{\"mode\":\"group\",\"topic\":\"%s\",\"protocol\":\"%s\",\"read\":%d,\"events\":\"%s\"}%n",
                topic, protocol, read.get(), String.join(";", events));
    }

    static Properties producerProperties(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "corpus-group-feeder");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return p;
    }

    static void member(
            String bootstrap,
            String topic,
            String protocol,
            int id,
            AtomicInteger read,
            AtomicBoolean twoDone,
            List<String> events) {
        Properties c = consumerProperties(bootstrap, "corpus-member-" + id);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, "corpus-group-" + protocol);
        c.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (protocol.equals("classic")) {
            c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        }
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic), new Listener(id, events));
            // Member two stays until it has held partitions for two seconds; member one until
            // three seconds after member two left (its heartbeats see the second rebalance).
            long deadline = System.currentTimeMillis() + 60_000;
            long until = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(deadline, until)) {
                read.addAndGet(consumer.poll(Duration.ofMillis(200)).count());
                if (!consumer.assignment().isEmpty()) {
                    consumer.commitSync();
                }
                if (until == Long.MAX_VALUE && (id == 2 ? !consumer.assignment().isEmpty() : twoDone.get())) {
                    until = System.currentTimeMillis() + (id == 2 ? 2_000 : 3_000);
                }
            }
            consumer.commitSync();
        }
        synchronized (events) {
            events.add(id + " left");
        }
    }

    static boolean contains(List<String> events, String what) {
        synchronized (events) {
            return events.contains(what);
        }
    }

    static void waitFor(java.util.function.BooleanSupplier condition, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.getAsBoolean() && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
    }

    record Listener(int id, List<String> events)
            implements org.apache.kafka.clients.consumer.ConsumerRebalanceListener {
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            synchronized (events) {
                events.add(id + " assigned");
            }
        }

        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {}
    }

    static void admin(String bootstrap, String topic) throws Exception {
        Properties a = new Properties();
        a.put("bootstrap.servers", bootstrap);
        a.put("client.id", "corpus-admin");
        try (Admin admin = Admin.create(a)) {
            String clusterId = admin.describeCluster().clusterId().get();
            int nodes = admin.describeCluster().nodes().get().size();
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
            Set<String> names = admin.listTopics().names().get();
            admin.describeTopics(List.of(topic)).allTopicNames().get();
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            AlterConfigOp op = new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(op))).all().get();
            String retention = admin.describeConfigs(List.of(resource)).all().get().get(resource)
                    .get("retention.ms").value();
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "100");
            int brokerConfigs = admin.describeConfigs(List.of(broker)).all().get().get(broker).entries().size();
            Map<TopicPartition, OffsetSpec> specs = Map.of(
                    new TopicPartition(topic, 0), OffsetSpec.earliest(),
                    new TopicPartition(topic, 1), OffsetSpec.latest(),
                    new TopicPartition(topic, 2), OffsetSpec.maxTimestamp());
            int listed = admin.listOffsets(specs).all().get().size();
            admin.deleteTopics(List.of(topic)).all().get();
            System.out.printf(
                    "{\"mode\":\"admin\",\"topic\":\"%s\",\"cluster_id\":\"%s\",\"nodes\":%d,\"listed_topic\":%b,"
                            + "\"retention_ms\":\"%s\",\"broker_configs\":%d,\"offsets_listed\":%d}%n",
                    topic, clusterId, nodes, names.contains(topic), retention, brokerConfigs, listed);
        }
    }
}
