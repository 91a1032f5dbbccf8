"""``BodyDecoder.fill``, the exchange path's one call per exchange, puts into a row exactly what the
body-at-a-time path (``request``/``response``, a ``Decoded`` per body) combined as exchanges used
to: each body's JSON, the response's error codes and throttle time, every problem in order, and a
status of "ok" lowered to the worst body's (decode_error before unsupported_version).

Frames are KRaft exchanges from the bundled codecs, drawn whole or damaged: cut short, trailing
bytes, a byte flipped, the header's API version or key replaced, the response missing.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwire.spark_decoders.kafka.bodies import FAILED, UNSUPPORTED, BodyDecoder
from kraftwire.spark_decoders.kafka.headers import RequestHead, read_request_head
from kraftwire.spark_decoders.kafka.rows import COLUMNS
from kraftwire.spark_decoders.kafka.traffic import kraft_exchanges

pytestmark = pytest.mark.timeout(300)

POOL = kraft_exchanges(14, seed=5)


@pytest.fixture(scope="module")
def bodies() -> BodyDecoder:
    import kraftwire.generated as package

    return BodyDecoder(package)


class _Permissive(BodyDecoder):
    """Lets every API version through to the codecs, whose own version checks then speak: the
    way to an unsupported_version body beside a response that fails (which outranks it)."""

    def knows(self, api_key: int, api_version: int) -> bool:
        return api_key in self.package.APIS


@pytest.fixture(scope="module")
def permissive() -> BodyDecoder:
    import kraftwire.generated as package

    return _Permissive(package)


@st.composite
def damaged(draw, payload: bytes, header: bool) -> bytes:
    """``payload`` as sent, or damaged one way (``header``: its API key and version may change)."""
    kinds = ["keep", "keep", "cut", "trail", "flip"] + (["version", "key"] if header else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "cut":
        return payload[: draw(st.integers(0, len(payload) - 1))]
    if kind == "trail":
        return payload + draw(st.binary(min_size=1, max_size=8))
    if kind == "flip":
        at = draw(st.integers(0, len(payload) - 1))
        return payload[:at] + bytes([payload[at] ^ draw(st.integers(1, 255))]) + payload[at + 1 :]
    if kind == "version":
        return payload[:2] + draw(st.integers(0, 40)).to_bytes(2, "big") + payload[4:]
    if kind == "key":
        return draw(st.sampled_from([b"\x00\x34", b"\x00\x7f", b"\x00\x01"])) + payload[2:]
    return payload


@st.composite
def exchanges(draw) -> tuple[bytes, bytes | None]:
    chosen = draw(st.sampled_from(POOL))
    request = draw(damaged(chosen.request[4:], header=True))
    response = None if draw(st.integers(0, 4)) == 0 else draw(damaged(chosen.response[4:], False))
    return request, response


def _blank(bodies: BodyDecoder, head: RequestHead, response: bytes | None) -> dict:
    row = dict.fromkeys(COLUMNS)
    row["api_name"] = bodies.api_name(head.api_key)
    row["status"] = "ok" if response is not None else "no_response"
    return row


def _one_body_at_a_time(
    bodies: BodyDecoder, row: dict, problems: list[str], request: bytes, head: RequestHead, response
) -> None:
    """The exchange path as it was before ``fill``: a Decoded per body, then combined."""
    if not bodies.knows(head.api_key, head.api_version):
        name = row["api_name"] or f"API key {head.api_key}"
        problems.append(f"no codec for {name} v{head.api_version}")
        if row["status"] == "ok":
            row["status"] = UNSUPPORTED
        return
    parts = [bodies.request(request, head.api_key, head.api_version)]
    row["request_json"] = parts[0].json_text
    if response is not None:
        answer = bodies.response(response, head.api_key, head.api_version)
        parts.append(answer)
        row["error_code"] = answer.error_code
        row["error_codes"] = answer.error_codes
        row["throttle_time_ms"] = answer.throttle_time_ms
        row["response_json"] = answer.json_text
    for part in parts:
        if part.message is not None:
            problems.append(part.message)
        if part.problem is not None and row["status"] in ("ok", UNSUPPORTED):
            row["status"] = FAILED if part.problem == FAILED else UNSUPPORTED


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exchange=exchanges(), lets_all_through=st.booleans())
def test_fill_puts_into_the_row_what_each_body_decoded_alone_gives(
    bodies, permissive, exchange, lets_all_through
):
    if lets_all_through:
        bodies = permissive
    request, response = exchange
    head = read_request_head(request)
    if head is None:  # too short for a header: pairing never gets that far
        return
    filled, filled_problems = _blank(bodies, head, response), []
    bodies.fill(filled, filled_problems, request, head, response)
    expected, expected_problems = _blank(bodies, head, response), []
    _one_body_at_a_time(bodies, expected, expected_problems, request, head, response)
    assert filled == expected
    assert filled_problems == expected_problems
    assert list(filled) == list(COLUMNS)


def test_the_drawn_exchanges_reach_every_outcome(bodies, permissive):
    """The damage the property test draws does reach each status and each kind of problem (a
    property over undamaged frames alone would prove little)."""
    outcomes = set()
    vote = POOL[0]
    future = vote.request[4:6] + b"\x00\x28" + vote.request[8:]  # Vote v40
    head = read_request_head(future)
    assert head is not None
    row, problems = _blank(permissive, head, b""), []
    permissive.fill(row, problems, future, head, vote.response[4:6])
    assert row["status"] == FAILED and problems[0].startswith("request: VoteRequest v40")
    for exchange in POOL:
        request, response = exchange.request[4:], exchange.response[4:]
        cases = [
            (request, response),
            (request, response[:-3]),
            (request[:-2], response),
            (request, response + b"\x00"),
            (b"\x00\x7f" + request[2:], response),
            (request, None),
        ]
        for one, other in cases:
            head = read_request_head(one)
            assert head is not None
            row, problems = _blank(bodies, head, other), []
            bodies.fill(row, problems, one, head, other)
            outcomes.add(row["status"])
            outcomes.update(problem.split(":")[0].split(" ")[0] for problem in problems)
    assert {"ok", "no_response", FAILED, UNSUPPORTED, "request", "response", "no"} <= outcomes
