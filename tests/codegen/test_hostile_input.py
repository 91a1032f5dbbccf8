"""Hostile sizes and counts: every decode ends in a DecodeError, and no loop outruns its input.

Each reproducer here once hung or spun: a tagged-field size of 2^31 or more read as a negative number
moved the position backwards, so a tag loop with a count of up to 2^31-1 re-read the same entry
forever. A loop guard counts the iterations of every ``for`` loop in the generated readers (no timing):
one activation of a loop may run at most as many iterations as the input has bytes.
"""

from __future__ import annotations

import ast
import struct
import sys
from functools import cache
from pathlib import Path

import pytest

import kraftwire.generated as bundled
from kraftwire.generated import DecodeError
from kraftwire.generated.snapshot_footer_record import SnapshotFooterRecord
from kraftwire.records import decode_control_record


READERS = ("_read_", "read_", "skip_")  # generated readers and the runtime's read helpers


class LoopBoundExceeded(BaseException):
    """Raised by the guard; a BaseException so the readers' ``except Exception`` cannot swallow it."""


@cache
def _loops(filename: str) -> dict[int, tuple[int, frozenset[int]]]:
    """For each ``for`` header line of a source file: its first body line and every line of its body."""
    tree = ast.parse(Path(filename).read_text(encoding="utf-8"))
    loops = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.For):
            body = frozenset(
                line
                for stmt in node.body
                for line in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)
            )
            loops[node.lineno] = (node.body[0].lineno, body)
    return loops


class LoopGuard:
    """Counts, per activation, the iterations of every ``for`` loop in one package's modules."""

    def __init__(self, package_dir: Path) -> None:
        self.package_dir = str(package_dir)
        self.limit = 0
        self.most = 0  # the largest iteration count any one loop activation reached

    def run(self, limit: int, call, *args):
        self.limit, self.most = limit, 0
        previous = sys.gettrace()
        sys.settrace(self._on_call)
        try:
            return call(*args)
        finally:
            sys.settrace(previous)

    def _on_call(self, frame, event, arg):
        filename = frame.f_code.co_filename
        if not filename.startswith(self.package_dir) or not frame.f_code.co_name.startswith(READERS):
            return None  # not a reader: the error path (which rebuilds paths) runs once per failure
        loops = _loops(filename)
        if not loops:
            return None
        first_lines = {first: header for header, (first, _) in loops.items()}
        counts: dict[int, int] = {}
        last_line = [0]

        def on_line(frame, event, arg):
            if event != "line":
                return on_line
            line = frame.f_lineno
            loop = loops.get(line)
            if loop is not None and last_line[0] not in loop[1] and last_line[0] != line:
                counts[line] = 0  # entering the loop afresh (not coming round from its body)
            header = first_lines.get(line)
            if header is not None:
                counts[header] = counts.get(header, 0) + 1
                self.most = max(self.most, counts[header])
                if counts[header] > self.limit:
                    raise LoopBoundExceeded(
                        f"{filename}:{header} ran {counts[header]} iterations "
                        f"on {self.limit} bytes of input"
                    )
            last_line[0] = line
            return on_line

        return on_line


def _guard(package) -> LoopGuard:
    return LoopGuard(Path(package.__file__).parent)


# -- the reproducers ----------------------------------------------------------------------------------

FOOTER_HANG = bytes.fromhex("7fa6ffffffff0764faffffff0f")


def test_negative_tag_size_in_a_record_value_fails_fast():
    guard = _guard(bundled)
    with pytest.raises(DecodeError, match="tagged fields need at least"):
        guard.run(len(FOOTER_HANG), SnapshotFooterRecord.decode, FOOTER_HANG, 0)
    assert guard.most <= 1


def test_negative_tag_size_as_a_control_record_fails_fast():
    key = struct.pack(">hh", 0, 4)  # key version 0, type 4: a snapshot footer
    with pytest.raises(DecodeError, match="SnapshotFooter.*tagged fields need at least"):
        _guard(bundled).run(len(FOOTER_HANG), decode_control_record, key, FOOTER_HANG)


@pytest.mark.parametrize(
    "data, message",
    [
        # 2^31-1 tags claimed by 6 bytes
        ("7fa6ffffffff0764faffffff0f", "2147483647 tagged fields need at least 4294967294 bytes"),
        # one tag whose size is 0xfffffffa, -6 as Java's int: the position must never move backwards
        ("7fa60164faffffff0f", "tagged field 100 has a negative size -6"),
        # a size past the end of the input, and a negative tag count
        ("7fa60164ffffffff07", "tagged field 100 of 2147483647 bytes runs past the end"),
        ("7fa6ffffffff0f", "negative tagged field count -1"),
        ("7fa6016464", "tagged field 100 of 100 bytes runs past the end"),
    ],
)
def test_untrusted_tag_counts_and_sizes_are_checked_before_use(data, message):
    with pytest.raises(DecodeError, match=message):
        SnapshotFooterRecord.decode(bytes.fromhex(data), 0)


def test_describe_cluster_tag_loop_fails_at_once_with_the_real_reason(upstream):
    # v1: a bool and an int8, then a tagged section claiming 262,143 tags in 9 bytes, the first of
    # which is tag 98 with a size of -6. This used to spin 262,143 times, then blame 6 left-over bytes.
    # The first byte, ff, is not a canonical bool, which is now the first thing reported; with a
    # true bool (01) the tag count is.
    cls = upstream.lookup("DescribeClusterRequest")
    guard = _guard(upstream)
    for data, reason in [
        ("ffffffff0f62faffffff0f", "include_cluster_authorized_operations: bool byte 255 is neither 0 nor 1 at offset 0"),
        ("01ffffff0f62faffffff0f", "262143 tagged fields need at least 524286 bytes, but only 6 remain"),
    ]:
        with pytest.raises(upstream.DecodeError) as info:
            guard.run(len(data) // 2, cls.decode, bytes.fromhex(data), 1)
        assert reason in str(info.value)
        assert "left over" not in str(info.value)
        assert guard.most <= 1


# -- every (spec, version) pair with hostile tagged sections -----------------------------------------

HOSTILE_TAG_SECTIONS = [
    bytes.fromhex(text)
    for text in (
        "ffffffff0764faffffff0f",  # 2^31-1 tags, an unknown tag of size -6
        "7f64faffffff0f",  # 127 tags, an unknown tag of size -6
        "0164faffffff0f",  # one unknown tag of size -6
        "0100faffffff0f",  # tag 0 (known in many versions) of size -6
        "02640064faffffff0f",  # an empty unknown tag, then one of size -6
        "ffffffff0f",  # a negative tag count
        "0164ffffffff07",  # a size of 2^31-1
        "01ffffffff0f00",  # tag number 2^32-1, -1 as Java's int
        "0480808080",  # a count whose tags would need more bytes than remain
    )
]


def _pairs(package):
    for name in sorted(package.SPECS):
        cls = package.lookup(name)
        for version in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            yield cls, version


def _check_hostile_tails(package) -> int:
    """Replace each flexible message's top-level tagged section (its last byte) with hostile ones;
    append them to non-flexible messages. Returns the number of (spec, version) pairs tried."""
    guard = _guard(package)
    tried = 0
    for cls, version in _pairs(package):
        try:
            valid = cls().encode(version)
        except package.EncodeError:
            # Kafka's test spec AllTypeMessage has non-nullable records defaulting to null at v0-1
            assert cls.SPEC_NAME == "AllTypeMessage", (cls.SPEC_NAME, version)
            continue
        flexible = cls.LOWEST_FLEXIBLE_VERSION is not None and version >= cls.LOWEST_FLEXIBLE_VERSION
        if flexible:
            assert valid[-1] == 0, (cls.SPEC_NAME, version)
        head = valid[:-1] if flexible else valid
        for tail in HOSTILE_TAG_SECTIONS:
            data = head + tail
            try:
                guard.run(len(data), cls.decode, data, version)
            except package.DecodeError as error:
                assert cls.SPEC_NAME in str(error)
            else:
                pytest.fail(f"{cls.SPEC_NAME} v{version} decoded {data.hex()}")
        tried += 1
    return tried


def test_hostile_tag_sections_in_every_bundled_message():
    assert _check_hostile_tails(bundled) >= 80  # 30 specs, all their versions


def test_hostile_tag_sections_in_every_upstream_message(upstream):
    assert _check_hostile_tails(upstream) >= 760  # 292 specs, all their versions


@pytest.mark.skipif(
    bundled.CODEC_IMPLEMENTATION != "pure",
    reason="the guard traces Python frames: compiled loops are invisible to it "
    "(tests/codegen/native/test_differential.py compares them with the pure ones)",
)
def test_the_guard_notices_a_loop_that_outruns_its_input():
    # The guard itself must be able to fail: a 2-element array read from a 1-byte "input" budget.
    from kraftwire.generated.fetch_request import FetchRequest, FetchTopic

    data = FetchRequest(topics=[FetchTopic(), FetchTopic()]).encode(4)
    with pytest.raises(LoopBoundExceeded):
        _guard(bundled).run(1, FetchRequest.decode, data, 4)
