"""Kafka on a TCP connection: frames, request/response headers, bodies decoded with the generated
codecs, exchanges matched and their rows. Built on ``packets``."""
