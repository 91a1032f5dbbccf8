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


@pytest.fixture(scope="session")
def upstream():
    """A package generated from all of Kafka's specs in ../shared (skips when ../shared is absent)."""
    from generated_packages import generated_package
    from shared import shared_path

    return generated_package([shared_path("kafka-schemas")], "kwupstream")
