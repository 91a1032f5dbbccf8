"""The checksum and framing helpers behind the codecs: CRC-32C (C and pure-Python), xxHash32, and the
LZ4 frame layout Kafka's Java client writes."""

from __future__ import annotations

import importlib
import os
import random

import pytest

from kraftwire.records import crc32c, decode_batches, encode_batch

# kafka-python loads its protocol schemas with deprecated importlib.resources calls.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

records_module = importlib.import_module(decode_batches.__module__)
package = records_module.__name__.rsplit(".", 1)[0]
_crc = importlib.import_module(package + "._crc32c")
_frames = importlib.import_module(package + "._frames")


def test_crc32c_known_value_and_python_fallback():
    assert crc32c(b"123456789") == 0xE3069283
    assert _crc.crc32c_python(b"123456789") == 0xE3069283
    rng = random.Random(7)
    for size in (0, 1, 7, 64, 1000):
        data = bytes(rng.getrandbits(8) for _ in range(size))
        assert _crc.crc32c_python(data) == crc32c(data)
    assert _crc.crc32c_python(b"6789", _crc.crc32c_python(b"12345")) == 0xE3069283


def test_xxh32_matches_the_reference():
    xxhash = pytest.importorskip("xxhash")
    assert _frames.xxh32(b"") == 0x02CC5D05
    for size in range(0, 40):
        data = os.urandom(size)
        assert _frames.xxh32(data) == xxhash.xxh32(data).intdigest()
        assert _frames.xxh32(data, 12345) == xxhash.xxh32(data, seed=12345).intdigest()


def test_lz4_frames_have_kafkas_layout():
    """KafkaLZ4BlockOutputStream: FLG 0x60, BD 0x40, independent 64 KiB blocks, raw when incompressible."""
    data = encode_batch([(None, os.urandom(70_000), None, 0)], compression="lz4")
    body = data[61:]
    assert body[:7] == bytes.fromhex("04224d18604082")
    first = int.from_bytes(body[7:11], "little")
    assert first & 0x80000000 and first & 0x7FFFFFFF == 64 * 1024  # stored raw, full block
    assert body.endswith(b"\x00\x00\x00\x00")
    lz4_frame = pytest.importorskip("lz4.frame")
    assert len(lz4_frame.decompress(body)) > 70_000  # python-lz4 (liblz4) reads it


def test_snappy_is_xerial_framed_like_the_java_client():
    data = encode_batch([(None, b"abc" * 30_000, None, 0)], compression="snappy")
    body = data[61:]
    assert body[:16] == b"\x82SNAPPY\x00" + bytes.fromhex("0000000100000001")
    pytest.importorskip("snappy")
    from kafka.codec import snappy_decode  # python-snappy with kafka-python's xerial reader

    assert snappy_decode(body).count(b"abc") == 30_000


def test_raw_snappy_is_read_too():
    cramjam = pytest.importorskip("cramjam")
    plain = bytearray(encode_batch([(b"k", b"v" * 500, None, 0)]))
    raw = bytes(cramjam.snappy.compress_raw(bytes(plain[61:])))
    batch = bytearray(plain[:61]) + raw
    batch[22] |= 2  # attributes: snappy
    batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    (decoded,), _ = decode_batches(bytes(batch))
    assert decoded.compression == "snappy" and decoded.records[0].value == b"v" * 500


def test_standard_library_only():
    """Without cramjam and any C CRC-32C: none/gzip still work, CRC-32C falls back to Python, and the
    other codecs name the package to install."""
    import subprocess
    import sys

    script = """
import sys
for name in ("cramjam", "crc32c", "google_crc32c"):
    sys.modules[name] = None
from kraftwire.records import CodecUnavailableError, crc32c_backend, decode_batches, encode_batch
assert crc32c_backend == "python", crc32c_backend
for codec in ("none", "gzip"):
    data = encode_batch([(b"k", b"v" * 100, [("h", None)], 5)], compression=codec)
    assert decode_batches(data)[0][0].records[0].value == b"v" * 100
try:
    encode_batch([(b"k", b"v", None, 5)], compression="lz4")
except CodecUnavailableError as exc:
    assert "pip install cramjam" in str(exc)
else:
    raise AssertionError("lz4 without cramjam")
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
