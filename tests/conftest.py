import sys
from pathlib import Path

# Tests import their helpers (shared.py, ...) as plain modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--rewrite",
        action="store_true",
        default=False,
        help="write the actual output over the expected blocks of the datadriven transcripts "
        "(tests/node/testdata), like etcd's datadriven -rewrite; review the diff before committing",
    )


SERIAL_FOLDERS = {"interop"}
"""Test folders run alone by ``make test``'s second pass: they start Kafka's JVMs (three or four per
test, a core's worth of start-up each) and assert on quorums whose timing a parallel neighbour
would disturb. Single tests elsewhere opt in with ``@pytest.mark.serial``."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "serial: run in make test's second pass, alone (not beside other tests)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_root = Path(__file__).resolve().parent
    for item in items:
        try:
            folder = item.path.resolve().relative_to(tests_root).parts[0]
        except ValueError:  # a test file named from outside tests/
            continue
        if folder in SERIAL_FOLDERS:
            item.add_marker(pytest.mark.serial)


@pytest.fixture(scope="session")
def upstream():
    """A package generated from all of Kafka's specs in ../shared (skips when ../shared is absent)."""
    from generated_packages import generated_package
    from shared import shared_path

    return generated_package([shared_path("kafka-schemas")], "kwupstream")
