"""The local entry points: captures decoded in this process.

    from kraftwire.spark_decoders import decode_local

Spark's (``register``, ``read_exchanges``) are in ``spark.reading``; the package's ``__init__``
offers them too, importing pyspark only when they are first asked for.
"""

from __future__ import annotations

from typing import Any

from kraftwire.codegen.package_cache import generated_codecs, load_codecs, parse_schema_dirs

from .decode.pipeline import DecodeOptions, decode_files
from .kafka.bodies import BodyDecoder
from .kafka.connection import DEFAULT_SERVER_PORTS
from .output.sightings import merge_sightings
from .output.tables import EXCHANGES, check_table


def local_decoder(schemas: str | None = None) -> BodyDecoder:
    dirs = parse_schema_dirs(schemas)
    if not dirs:
        return BodyDecoder(load_codecs(None))
    package, _ = generated_codecs(dirs)
    return BodyDecoder(package)


def decode_local(
    paths: list[str],
    schemas: str | None = None,
    ports: frozenset[int] = DEFAULT_SERVER_PORTS,
    table: str = EXCHANGES,
) -> list[dict[str, Any]]:
    """Rows of ``table`` (exchanges, frames or connections) of the captures, decoded in this process.
    An exchange several of the captures saw is one row (``sightings.merge_sightings``)."""
    options = DecodeOptions(server_ports=ports, table=check_table(table))
    rows, _ = decode_files(paths, local_decoder(schemas), options)
    return merge_sightings(rows) if table == EXCHANGES else rows
