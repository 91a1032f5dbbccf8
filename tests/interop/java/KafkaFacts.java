// Prints the facts of a Kafka release's kafka-clients jar that kraftwire's schemas/ keep as data:
// one tab-separated line per error code ("error", code, name, retriable, default message) and one per
// API key ("api", key, name). tests/interop/kafka_facts.py compiles and runs it against the pinned jar.
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;

public final class KafkaFacts {
    public static void main(String[] args) {
        StringBuilder out = new StringBuilder();
        for (Errors error : Errors.values()) {
            boolean retriable = error.exception() instanceof RetriableException;
            out.append("error\t").append(error.code()).append('\t').append(error.name()).append('\t')
                .append(retriable).append('\t').append(error.message()).append('\n');
        }
        for (ApiKeys key : ApiKeys.values()) {
            out.append("api\t").append(key.id).append('\t').append(key.name).append('\n');
        }
        System.out.print(out);
    }
}
