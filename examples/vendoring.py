"""Vendor a generated package into another project and use it there without kraftwire installed.

    .venv/bin/python examples/vendoring.py

Runs ``kraftwire codegen`` (here on four of our own specs; point ``--schemas`` at Kafka's specs, a
``kafka-clients-*.jar`` or a release tarball for every API) into ``myproject/vendor/kafka`` of a
temporary project, then runs a script of that project under ``python -S`` (no site-packages, so
neither kraftwire nor any other installed package is importable) to show the vendored codecs need
only the standard library.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPECS = ("VoteRequest", "VoteResponse", "RequestHeader", "ResponseHeader")

APP = """\
import sys
sys.path.insert(0, sys.argv[1])  # the project root (python -S adds nothing on its own)

import myproject.vendor.kafka as kafka
from myproject.vendor.kafka.vote_request import VoteRequest

request = VoteRequest(cluster_id="vendored", voter_id=4)
frame = kafka.encode_request(request, 2, correlation_id=1, client_id="myproject")
payload, _ = kafka.read_frame(frame)
assert kafka.decode_request(payload).body == request
assert "kraftwire" not in sys.modules  # only the vendored copy was used
print(f"myproject: VoteRequest v2 round trip through {kafka.__name__} ({len(frame)} bytes)")
"""


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="kraftwire-vendor-") as tmp:
        root = Path(tmp)
        for package in ("myproject", "myproject/vendor"):
            (root / package).mkdir()
            (root / package / "__init__.py").write_text("")
        out = root / "myproject" / "vendor" / "kafka"
        codegen = [sys.executable, "-m", "kraftwire", "codegen", "--out", str(out)]
        codegen += ["--package", "myproject.vendor.kafka", "--schemas"]
        codegen += [str(REPO / "schemas" / f"{name}.json") for name in SPECS]
        subprocess.run(codegen, check=True)
        (root / "app.py").write_text(APP)
        subprocess.run([sys.executable, "-S", str(root / "app.py"), str(root)], check=True)
        files = sorted(p.name for p in out.glob("*.py"))
        print(textwrap.fill(f"vendored files: {', '.join(files)}", width=100))


if __name__ == "__main__":
    main()
