"""Codecs from spec directories: generated once, cached by content hash, shippable by value; and the
CPU-time guard around body decodes."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest

from kraftwire.codegen.package_cache import (
    CodecBundle,
    compile_native,
    generated_codecs,
    specs_fingerprint,
)
from kraftwire.spark_decoders.kafka.guard import DecodeTimeout, guarded
from shared import shared_path

pytestmark = pytest.mark.timeout(600)


@pytest.fixture()
def spec_dir(tmp_path):
    source = (
        shared_path("kafka-schemas")
        / "clients"
        / "src"
        / "main"
        / "resources"
        / "common"
        / "message"
    )
    target = tmp_path / "specs"
    target.mkdir()
    for name in ("RequestHeader", "ResponseHeader", "VoteRequest", "VoteResponse"):
        shutil.copy(source / f"{name}.json", target)
    return target


def test_generated_once_then_cached_and_keyed_by_content(spec_dir, tmp_path):
    cache = tmp_path / "cache"
    package, bundle = generated_codecs([spec_dir], cache)
    marker = cache / package.__name__ / package.__name__ / "__init__.py"
    stamp = marker.stat().st_mtime_ns
    again, _ = generated_codecs([spec_dir], cache)
    assert again is package and marker.stat().st_mtime_ns == stamp  # not regenerated
    assert sorted(package.APIS) == [52]
    (spec_dir / "VoteRequest.json").write_text((spec_dir / "VoteRequest.json").read_text() + "\n")
    assert specs_fingerprint([spec_dir]) not in package.__name__  # an edit is a new package
    assert {name for name, _ in bundle.files} >= {"__init__.py", "vote_request.py"}


def test_compile_native_builds_the_named_specs_once_into_the_cached_package(
    spec_dir, tmp_path, monkeypatch
):
    """The build itself (mypyc, minutes) is ``kraftwire codegen --native``'s and is replaced here by
    one that places a stand-in extension: what is checked is which specs go to it, and where."""
    import kraftwire.codegen.native.build as native_build

    builds = []

    def fake_build(specs, package, out_dir):
        builds.append(([spec.stem for spec in specs], package))
        for spec in specs:
            (out_dir / f"_native_{spec.module}.cpython-fake.so").write_bytes(b"")

    monkeypatch.setattr(native_build, "build_native", fake_build)
    cache = tmp_path / "cache"
    assert compile_native([spec_dir], ["VoteRequest", "RequestHeader"], cache) == [
        "RequestHeader",
        "VoteRequest",
    ]
    package_name = f"kraftwire_codecs_{specs_fingerprint([spec_dir])}"
    assert builds == [(["RequestHeader", "VoteRequest"], package_name)]
    assert (cache / package_name / package_name / "vote_request.py").exists()
    assert compile_native([spec_dir], ["VoteRequest", "VoteResponse"], cache) == ["VoteResponse"]
    assert builds[-1] == (["VoteResponse"], package_name)
    with pytest.raises(ValueError, match="no spec named FetchRequest"):
        compile_native([spec_dir], ["FetchRequest"], cache)


def test_bundle_materialises_on_a_machine_without_the_specs(spec_dir, tmp_path):
    _, bundle = generated_codecs([spec_dir], tmp_path / "driver-cache")
    shutil.rmtree(spec_dir)  # the executor has no specs and no shared cache
    code = (
        "import pickle, sys\n"
        "from pathlib import Path\n"
        "bundle = pickle.loads(sys.stdin.buffer.read())\n"
        "package = bundle.materialise(Path(sys.argv[1]))\n"
        "print(package.APIS[52].name)\n"
    )
    import pickle

    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "executor-cache")],
        input=pickle.dumps(bundle),
        capture_output=True,
        check=True,
    )
    assert result.stdout.decode().strip() == "Vote"
    assert isinstance(bundle, CodecBundle)


def test_guard_interrupts_a_runaway_decode():
    def spin():
        while True:
            pass

    started = time.process_time()
    with pytest.raises(DecodeTimeout):
        guarded(spin, 0.2)
    assert time.process_time() - started < 5
    assert guarded(lambda: 42) == 42  # back to the default limit; ordinary calls pass


def test_a_body_read_that_runs_away_is_a_decode_error_row_not_a_hang():
    """The decoder's own guard around each body read (marked inline in ``guard.MARK``): a read that
    never returns becomes a decode_error naming the limit, and the next body decodes as usual. The
    first read arms the timer through ``guard.arm``; the second finds it armed and only marks."""
    from kraftwire.generated import encode_request, lookup
    from kraftwire.spark_decoders.kafka.bodies import BodyDecoder, _Codec
    from kraftwire.codegen.package_cache import load_codecs

    class Spinning:
        @staticmethod
        def read(buf, pos, version):
            while True:
                pass

    decoder = BodyDecoder(load_codecs(None), limit_s=0.2)
    vote = lookup("VoteRequest")
    payload = encode_request(vote(cluster_id="c"), 0, 1, "client")[4:]
    plain = decoder._codec(vote.API_KEY, 0, True)
    stuck = _Codec(plain.header, plain.header_version, True, Spinning, False, False)
    decoded = decoder._decoded(payload, stuck, 0)
    assert decoded.problem == "decode_error" and "CPU-time limit" in decoded.message
    assert decoder.request(payload, vote.API_KEY, 0).problem is None
    again = decoder._decoded(payload, stuck, 0)
    assert again.problem == "decode_error" and "CPU-time limit" in again.message


def test_guard_rearms_in_a_forked_child():
    """A child made by fork does not inherit its parent's interval timer: the guard starts one
    there, or a runaway decode in the child would never be interrupted (the parent bounds the wait
    and kills a child that hangs)."""
    script = (
        "import os, time\n"
        "from kraftwire.spark_decoders.kafka.guard import DecodeTimeout, guarded\n"
        "guarded(lambda: None, 0.2)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    def spin():\n"
        "        while True:\n"
        "            pass\n"
        "    try:\n"
        "        guarded(spin, 0.2)\n"
        "    except DecodeTimeout:\n"
        "        os._exit(0)\n"
        "    os._exit(1)\n"
        "deadline = time.monotonic() + 60\n"
        "while time.monotonic() < deadline:\n"
        "    done, status = os.waitpid(pid, os.WNOHANG)\n"
        "    if done:\n"
        "        raise SystemExit(os.waitstatus_to_exitcode(status))\n"
        "    time.sleep(0.05)\n"
        "os.kill(pid, 9)\n"
        "os.waitpid(pid, 0)\n"
        "raise SystemExit('the child was never interrupted')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr


def test_guard_never_kills_a_process_that_is_shutting_down():
    """Finalisation restores SIGVTALRM's default action (terminate): a tick while a big heap is
    freed would end a finished process with status 154, so ``make test`` failed after passing."""
    script = (
        "from kraftwire.spark_decoders.kafka.guard import guarded\n"
        "guarded(lambda: None, 0.01)\n"
        "heap = [[i] for i in range(3 * 10**6)]\n"
    )
    done = subprocess.run([sys.executable, "-c", script], timeout=300)
    assert done.returncode == 0
