"""``kraftwire codegen --schemas`` reads Kafka's specs straight from its jars and release tarball.

The jars are built here from ../shared/kafka-schemas, laid out as Kafka's build packs them: each
module's ``src/main/resources`` at the root of ``kafka-<module>-<version>.jar``, next to its classes.
"""

from __future__ import annotations

import importlib
import io
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from kraftwire.cli import main
from kraftwire.codegen.archives import jar_family
from kraftwire.codegen.generate import SpecSetError, load_specs
from shared import shared_path

VERSION = "4.5.0"
MODULES = (
    "clients",
    "group-coordinator",
    "metadata",
    "raft",
    "share-coordinator",
    "storage",
    "streams",
    "transaction-coordinator",
)


def build_jar(path: Path, resources: Path, names: set[str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        jar.writestr("org/apache/kafka/Placeholder.class", b"\xca\xfe\xba\xbe")
        for spec in sorted(resources.rglob("*")):
            if spec.is_file() and (names is None or spec.stem in names):
                jar.write(spec, spec.relative_to(resources).as_posix())
    return path


def kafka_jars(folder: Path, names: set[str] | None = None) -> list[Path]:
    schemas = shared_path("kafka-schemas")
    folder.mkdir(parents=True, exist_ok=True)
    return [
        build_jar(
            folder / f"kafka-{module}-{VERSION}.jar", schemas / module / "src/main/resources", names
        )
        for module in MODULES
    ]


def summary(specs) -> set[tuple]:
    return {(spec.stem, spec.family, spec.type, spec.api_key) for spec in specs}


def test_the_jars_give_the_same_specs_and_families_as_the_source_tree(tmp_path):
    schemas = shared_path("kafka-schemas")
    from_tree = [spec for spec in load_specs([schemas]) if "test" not in spec.path.parts]
    from_jars = load_specs(kafka_jars(tmp_path))
    assert len(from_jars) == 287
    assert summary(from_jars) == summary(from_tree)


def test_a_release_tarball_is_read_through_its_libs_jars(tmp_path):
    jars = kafka_jars(tmp_path / "jars")
    decoy = tmp_path / "other-lib-1.0.jar"  # not a Kafka jar: its JSON is not read
    with zipfile.ZipFile(decoy, "w") as jar:
        jar.writestr("message/NotASpec.json", "{]")
    tarball = tmp_path / f"kafka_2.13-{VERSION}.tgz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.addfile(tarfile.TarInfo(f"kafka_2.13-{VERSION}/libs"), io.BytesIO())
        for jar in [*jars, decoy]:
            tar.add(jar, f"kafka_2.13-{VERSION}/libs/{jar.name}")
    assert summary(load_specs([tarball])) == summary(load_specs(jars))


def test_codegen_from_a_jar_writes_an_importable_package(capsys, tmp_path):
    names = {
        "VoteRequest",
        "VoteResponse",
        "RequestHeader",
        "ResponseHeader",
        "LeaderChangeMessage",
    }
    [clients] = [jar for jar in kafka_jars(tmp_path / "jars", names) if "clients" in jar.name]
    out = tmp_path / "gen" / "kafkajar"
    assert main(["codegen", "--schemas", str(clients), "--out", str(out)]) == 0
    assert "generated 5 modules" in capsys.readouterr().err
    sys.path.insert(0, str(out.parent))
    try:
        package = importlib.import_module("kafkajar")
        vote = package.lookup("VoteRequest")(cluster_id="c", voter_id=3)
        assert package.lookup("VoteRequest").decode(vote.encode(2), 2) == vote
    finally:
        sys.path.remove(str(out.parent))
        sys.modules.pop("kafkajar", None)


def test_an_unreadable_archive_is_named(tmp_path):
    broken = tmp_path / "kafka-clients-4.5.0.jar"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(SpecSetError) as error:
        load_specs([broken])
    assert error.value.errors == [
        f"{broken}: cannot read the archive: File is not a zip file"  # the file named once
    ]


def test_a_jar_without_specs_is_an_error(tmp_path):
    empty = build_jar(tmp_path / "kafka-tools-4.5.0.jar", tmp_path / "nothing")
    with pytest.raises(SpecSetError) as error:
        load_specs([empty])
    assert "holds no Kafka spec JSON" in error.value.errors[0]


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("kafka-clients-4.1.0.jar", "clients"),
        ("kafka-group-coordinator-4.1.0.jar", "group-coordinator"),
        ("kafka-metadata-4.2.0-SNAPSHOT.jar", "metadata"),
        ("specs.jar", "specs"),
    ],
)
def test_a_jars_family_is_its_module_name(name, family):
    assert jar_family(name) == family


def test_specs_check_reads_jars_too(capsys, tmp_path):
    names = {"VoteRequest", "VoteResponse"}
    [clients] = [jar for jar in kafka_jars(tmp_path, names) if "clients" in jar.name]
    assert main(["specs", "check", str(clients)]) == 0
    assert capsys.readouterr().err.strip() == "2 files, 0 errors"
