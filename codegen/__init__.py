"""kraftwire.codegen: Kafka message specs → validated model → generated Python codecs."""

GENERATOR_VERSION = "0.1.0"
