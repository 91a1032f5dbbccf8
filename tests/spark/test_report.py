"""``kraftwire report``: a self-contained HTML page whose plots are there and render in headless
Chromium (skipped where it is not installed, except in CI, whose .ci/run installs it)."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess

import pytest

from captures import conversation, pcap_of, write
from kraftwire.cli import main
from kraftwire.spark_decoders.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(300)
pytest.importorskip("matplotlib")


def test_report_has_every_plot(tmp_path):
    capture = write(
        tmp_path, "kraft.pcap", pcap_of(conversation(kraft_exchanges(60, seed=3)).packets)
    )
    out = tmp_path / "report.html"
    assert main(["report", capture, "--out", str(out)]) == 0
    page = out.read_text()
    titles = re.findall(r"<h2>([^<]+)</h2>", page)
    assert titles[:2] == ["API mix", "Latency percentiles per API"]
    assert "KRaft elections over time" in titles and "KRaft fetch latency over time" in titles
    images = re.findall(r"src='data:image/png;base64,([^']+)'", page)
    assert len(images) == len(titles)
    assert all(base64.b64decode(image).startswith(b"\x89PNG\r\n\x1a\n") for image in images)
    assert main(["report", capture, "--out", str(out)]) == 2  # never overwrites


BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")


# CI installs Chromium (.ci/run), so there a missing browser fails the test instead of skipping it.
@pytest.mark.skipif(
    BROWSER is None and not os.environ.get("CI"), reason="Chromium is not installed"
)
def test_report_renders_in_headless_chromium(tmp_path):
    assert BROWSER is not None, "CI must install Chromium (.ci/run)"
    capture = write(
        tmp_path, "kraft.pcap", pcap_of(conversation(kraft_exchanges(30, seed=4)).packets)
    )
    out = tmp_path / "report.html"
    assert main(["report", capture, "--out", str(out)]) == 0
    # Once the page loaded, every plot image reports its decoded width in the DOM dump.
    script = tmp_path / "check.html"
    script.write_text(
        out.read_text().replace(
            "</body>",
            "<script>document.body.dataset.widths = "
            "[...document.images].map(i => i.naturalWidth).join(',');</script></body>",
        )
    )
    dom = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", script.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    widths = re.search(r'data-widths="([^"]*)"', dom).group(1).split(",")
    assert len(widths) >= 4 and all(int(w) > 100 for w in widths)
