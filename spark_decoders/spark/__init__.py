"""The decoders in PySpark: the ``kafka-pcap`` data source (connection shards) and the split plan
(byte-range splits stitched in a second stage). Modules that define Spark classes import pyspark."""
