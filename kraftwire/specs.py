"""``kraftwire specs list [--package NAME]`` and ``kraftwire specs check DIR...``.

``list`` shows what a generated package knows: its APIs (key, name, versions, first flexible
version of request and response) and its other specs (headers, KRaft records, data). ``check``
validates spec files (see ``kraftwire.codegen.check``).
"""

from __future__ import annotations

import argparse
from types import ModuleType

from .cli_input import load_package
from .inspect import add_package_options


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    from kraftwire.codegen import check

    sub = parser.add_subparsers(dest="specs_command", required=True, metavar="SUBCOMMAND")
    lister = sub.add_parser("list", help="the APIs and specs a generated package knows")
    add_package_options(lister)
    lister.set_defaults(_specs_run=run_list)
    checker = sub.add_parser(
        "check", help="validate spec files against every rule of Kafka's generator"
    )
    check.configure(checker)
    checker.set_defaults(_specs_run=check.run)


def run(args: argparse.Namespace) -> int:
    return int(args._specs_run(args) or 0)


def run_list(args: argparse.Namespace) -> int:
    package = load_package(args.package, args.path)
    print(f"{package.__name__}: {len(package.APIS)} APIs, {len(package.SPECS)} specs")
    print(api_table(package))
    others = sorted(set(package.SPECS) - _api_specs(package))
    if others:
        print(f"\nother specs ({len(others)}):")
        for stem in others:
            cls = package.lookup(stem)
            print(
                f"  {stem:<40} {cls.SPEC_TYPE:<18} "
                f"{_versions(cls.LOWEST_VERSION, cls.HIGHEST_VERSION)}"
            )
    return 0


def api_table(package: ModuleType) -> str:
    lines = [f"{'key':>5}  {'API':<36} {'versions':<9} {'flexible (req/resp)':<20}"]
    for key, info in sorted(package.APIS.items()):
        flexible = f"{_from(info.request_flexible)}/{_from(info.response_flexible)}"
        unstable = "  (latest unstable)" if info.latest_version_unstable else ""
        versions = _versions(info.lowest_version, info.highest_version)
        lines.append(f"{key:>5}  {info.name:<36} {versions:<9} {flexible:<20}{unstable}".rstrip())
    return "\n".join(lines)


def _api_specs(package: ModuleType) -> set[str]:
    return {stem for info in package.APIS.values() for stem in (info.request, info.response)}


def _versions(lowest: int, highest: int) -> str:
    return "none" if highest < lowest else f"{lowest}-{highest}"


def _from(version: int | None) -> str:
    return "-" if version is None else f"{version}+"
