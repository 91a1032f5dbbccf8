"""Our KRaft specs (``schemas/``) against their upstream twins, and round trips of the bundled package.

1. ``test_wire_equivalent_to_upstream``: the upstream twins of our 30 Kafka specs (found by file stem under
   ``../shared/kafka-schemas``) are generated into a package ``kwupstream_kraft``. For each of our
   specs at every valid version, random instances of OUR class must give the same bytes through the
   upstream class: via its JSON (``from_json(to_json)``) and via its decoder; our decoder must give
   the instance back. Our specs differ from upstream only in ``about`` texts, so any difference is a
   wire difference (a spec edit gone wrong, or a generator bug). kraftwire's own APIs (``OWN_APIS``,
   ReadOffset of issue #13) have no twin and are only round-tripped.
2. ``test_bundled_round_trip``: every spec of the bundled ``kraftwire.generated`` at every version:
   ``decode(encode(x)) == x`` and ``from_json(to_json(x)) == x``.

Examples per (spec, version): ``KRAFTWIRE_HYPOTHESIS_EXAMPLES`` (default 200) for the equivalence test,
a quarter of it (at least 10; default 50) for the round trip. Runs are derandomized (reproducible).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from kraftwire import generated as bundled
from kraftwire.codegen.generate import load_specs
from generated_packages import generated_package
from shared import shared_path
from strategies import message_instances

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
OWN_APIS = ("ReadOffsetRequest", "ReadOffsetResponse")  # kraftwire's, not in Kafka's tree
OUR_SPECS = sorted(load_specs([SCHEMAS]), key=lambda s: s.stem)
TWINNED_SPECS = [spec for spec in OUR_SPECS if spec.name not in OWN_APIS]
SPEC_VERSIONS = [(spec, v) for spec in OUR_SPECS for v in spec.valid_versions]
TWINNED_VERSIONS = [(spec, v) for spec in TWINNED_SPECS for v in spec.valid_versions]
UPSTREAM_PACKAGE = "kwupstream_kraft"

EXAMPLES = int(os.environ.get("KRAFTWIRE_HYPOTHESIS_EXAMPLES", "200"))
ROUND_TRIP_EXAMPLES = max(10, EXAMPLES // 4)


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def _run_property(strategy, check, examples: int) -> None:
    @_settings(examples)
    @given(strategy)
    def prop(instance):
        check(instance)

    prop()


def _json_text_round(obj: dict) -> dict:
    """Through real JSON text, as a JsonConverter peer would see it."""
    return json.loads(json.dumps(obj))


def _ids(params):
    return [f"{spec.stem}-v{v}" for spec, v in params]


def test_spec_set_is_the_kraft_thirty_the_node_client_apis_and_our_own():
    # The 30 KRaft specs, DescribeCluster, DescribeConfigs and Produce that the node serves to tools
    # and clients, and kraftwire's own APIs, which have no twin in Kafka's tree.
    assert len(TWINNED_SPECS) == 36
    client_apis = {
        "DescribeClusterRequest",
        "DescribeClusterResponse",
        "DescribeConfigsRequest",
        "DescribeConfigsResponse",
        "ProduceRequest",
        "ProduceResponse",
    }
    assert client_apis <= {s.stem for s in TWINNED_SPECS}
    assert sorted(spec.name for spec in OUR_SPECS if spec not in TWINNED_SPECS) == sorted(OWN_APIS)
    assert sorted(bundled.SPECS) == [s.stem for s in OUR_SPECS]


# ------------------------------------------------------------------------------------------------
# 1. equivalence with the upstream twins


def _find_upstream(root: Path, stem: str) -> Path:
    matches = [p for p in root.rglob(f"{stem}.json") if "/src/test/" not in p.as_posix()]
    assert len(matches) == 1, f"expected one upstream {stem}.json under {root}, found {matches}"
    return matches[0]


@pytest.fixture(scope="session")
def kraft_twins(tmp_path_factory):
    """The upstream twins of our 30 specs, generated into an importable package.

    Named ``kwupstream_kraft`` (not ``kwupstream``: conftest's ``upstream`` fixture uses that name for
    the package of all 292 upstream specs). Generation is cached by ``generated_packages``, keyed by
    the generator's sources and the copied specs.
    """
    root = shared_path("kafka-schemas")
    spec_dir = tmp_path_factory.mktemp("kraft-twins")
    for spec in TWINNED_SPECS:
        shutil.copyfile(_find_upstream(root, spec.stem), spec_dir / f"{spec.stem}.json")
    package = generated_package([spec_dir], UPSTREAM_PACKAGE)
    assert sorted(package.SPECS) == [s.stem for s in TWINNED_SPECS]
    return package


@pytest.mark.parametrize("spec, version", TWINNED_VERSIONS, ids=_ids(TWINNED_VERSIONS))
def test_wire_equivalent_to_upstream(kraft_twins, spec, version):
    ours = bundled.lookup(spec.stem)
    theirs = kraft_twins.lookup(spec.stem)
    assert (theirs.LOWEST_VERSION, theirs.HIGHEST_VERSION, theirs.LOWEST_FLEXIBLE_VERSION) == (
        ours.LOWEST_VERSION,
        ours.HIGHEST_VERSION,
        ours.LOWEST_FLEXIBLE_VERSION,
    )

    def check(instance):
        data = instance.encode(version)
        ours_json = instance.to_json(version)
        via_json = theirs.from_json(_json_text_round(ours_json), version)
        assert (
            via_json.encode(version) == data
        ), "upstream from_json(our to_json) encodes differently"
        decoded = theirs.decode(data, version)
        assert decoded.encode(version) == data, "upstream decode/encode of our bytes differs"
        assert decoded.to_json(version) == ours_json, "upstream JSON view of our bytes differs"
        assert ours.decode(data, version) == instance, "our decode of our bytes differs"

    _run_property(message_instances(bundled.lookup, spec, version), check, EXAMPLES)


# ------------------------------------------------------------------------------------------------
# 2. round trips of the bundled package


@pytest.mark.parametrize("spec, version", SPEC_VERSIONS, ids=_ids(SPEC_VERSIONS))
def test_bundled_round_trip(spec, version):
    cls = bundled.lookup(spec.stem)

    def check(instance):
        data = instance.encode(version)
        assert len(data) == instance.encoded_size(version)
        assert cls.decode(data, version) == instance
        assert cls.from_json(instance.to_json(version), version) == instance
        assert cls.from_json(_json_text_round(instance.to_json(version)), version) == instance

    _run_property(message_instances(bundled.lookup, spec, version), check, ROUND_TRIP_EXAMPLES)
