"""Local decoding: the capture files' packets into a table of connections that emits rows, for a
whole set of files (``pipeline``) or a capture read from a stream (``live``)."""
