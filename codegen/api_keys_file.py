"""``python -m kraftwire.codegen.api_keys_file SOURCE... > schemas/api_keys.json``: the API keys and
names of the request specs in spec SOURCEs (folders, kafka-clients jars, release tarballs), placeholder
specs of removed APIs included, as ``api_keys.json`` (see ``facts``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .facts import api_keys_document
from .facts_emit import request_names
from .generate import SpecSetError, load_specs


def main(argv: list[str] | None = None) -> int:
    sources = [Path(arg) for arg in (sys.argv[1:] if argv is None else argv)]
    if not sources:
        print(__doc__.split(":", 1)[0].strip("`"), file=sys.stderr)
        return 2
    try:
        specs = load_specs(sources)
    except SpecSetError as exc:
        print(f"kraftwire.codegen.api_keys_file: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(api_keys_document(request_names(specs)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
