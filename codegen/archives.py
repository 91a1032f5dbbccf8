"""Kafka's specs straight from a release: one of its jars, or the release tarball holding them.

Kafka's build packs each module's spec JSON into that module's jar as resources:
``common/message/*.json`` in kafka-clients, kafka-raft, kafka-streams and the coordinator jars,
``common/metadata/*.json`` in kafka-metadata and ``message/*.json`` in kafka-storage. A release
tarball (``kafka_2.13-4.1.0.tgz``) carries those jars under ``libs/``. The specs of one jar form one
family, named after the jar's module (``kafka-group-coordinator-4.1.0.jar`` -> ``group-coordinator``),
as the folders of a Kafka checkout name them.
"""

from __future__ import annotations

import io
import re
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

JAR_SUFFIXES = (".jar", ".zip")
TARBALL_SUFFIXES = (".tgz", ".tar.gz", ".tar")
SPEC_FOLDERS = frozenset({"message", "metadata"})  # the resource folders that hold spec JSON
# kafka-group-coordinator-4.1.0.jar -> group-coordinator, kafka-clients-4.2.0-SNAPSHOT.jar -> clients
_JAR_MODULE = re.compile(r"^(?:kafka-)?(?P<module>.+?)-\d[\w.+-]*$")
_NOT_CODE_JARS = ("-test", "-sources", "-javadoc")


class ArchiveError(ValueError):
    """A jar or tarball that cannot be read; the message names the file."""


@dataclass(frozen=True)
class ArchiveSpec:
    """One spec file read from an archive."""

    path: Path  # the archive's path joined with the member's path inside it
    text: str
    family: str


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(JAR_SUFFIXES + TARBALL_SUFFIXES)


def archive_specs(path: Path) -> list[ArchiveSpec]:
    """Every spec in the jar or release tarball at ``path``, in archive order."""
    try:
        if path.name.lower().endswith(JAR_SUFFIXES):
            return _jar_specs(path.read_bytes(), path)
        return _tarball_specs(path)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        raise ArchiveError(f"cannot read the archive: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ArchiveError(f"a spec in it is not UTF-8 text: {exc}") from None


def _jar_specs(data: bytes, where: Path) -> list[ArchiveSpec]:
    family = jar_family(where.name)
    specs = []
    with zipfile.ZipFile(io.BytesIO(data)) as jar:
        for member in jar.namelist():
            parts = PurePosixPath(member).parts
            if member.endswith(".json") and len(parts) >= 2 and parts[-2] in SPEC_FOLDERS:
                specs.append(ArchiveSpec(where / member, jar.read(member).decode("utf-8"), family))
    return specs


def _tarball_specs(path: Path) -> list[ArchiveSpec]:
    specs = []
    with tarfile.open(path) as tar:
        for member in tar:
            name = PurePosixPath(member.name)
            if member.isfile() and name.parent.name == "libs" and _is_kafka_jar(name.name):
                stream = tar.extractfile(member)
                if stream is not None:
                    specs.extend(_jar_specs(stream.read(), path / member.name))
    return specs


def _is_kafka_jar(name: str) -> bool:
    stem = name.removesuffix(".jar")
    return name.startswith("kafka") and name.endswith(".jar") and not stem.endswith(_NOT_CODE_JARS)


def jar_family(jar_name: str) -> str:
    stem = jar_name.rsplit(".", 1)[0]
    match = _JAR_MODULE.match(stem)
    return match["module"] if match else stem
