"""``kraftwire decode-frame``: whole Kafka frames (``int32 size``, header, body) as JSON.

A request names its API key and version in its header, so it decodes on its own. A response header
holds only the correlation id: ``--response API VERSION`` says which request it answers. Several
back-to-back frames (a stream dump) print one JSON document each.
"""

from __future__ import annotations

import argparse
from types import ModuleType
from typing import Any

from .cli_input import BAD_DATA, USAGE, CliError, load_package, parse_hex, read_bytes, read_text
from .inspect import (
    add_package_options,
    add_records_options,
    message_json,
    print_json,
    protocol_call,
)


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument(
        "hex",
        nargs="*",
        help="the frames as hex (spaces and 0x prefixes allowed; '-' for hex on stdin)",
    )
    parser.add_argument(
        "--file",
        metavar="PATH",
        help="read the frames as raw bytes from PATH ('-' for stdin) instead of hex",
    )
    parser.add_argument(
        "--response",
        nargs=2,
        metavar=("API", "VERSION"),
        help="decode responses to requests of API (key or name, e.g. 3 or Metadata) at VERSION",
    )
    add_records_options(parser)
    add_package_options(parser)


def run(args: argparse.Namespace) -> int:
    data = _input(args)
    package = load_package(args.package, args.path)
    response_to = _response_api(package, args.response) if args.response else None
    pos = index = 0
    while pos < len(data):
        payload, end = protocol_call(package, package.read_frame, data, pos)
        if payload is None:
            raise CliError(
                f"frame {index + 1} at byte {pos} is cut short: it declares "
                f"{int.from_bytes(data[pos:pos + 4], 'big', signed=True)} bytes after its size, "
                f"{len(data) - pos - 4} are present"
                if len(data) - pos >= 4
                else f"{len(data) - pos} stray bytes after frame {index}"
            )
        print_json(_frame_json(package, payload, response_to, args))
        pos, index = end, index + 1
    return 0


def _input(args: argparse.Namespace) -> bytes:
    if args.file is not None and args.hex:
        raise CliError("give the frames either as HEX or with --file, not both", USAGE)
    if args.file is not None:
        data = read_bytes(args.file, "--file")
    elif args.hex:
        data = parse_hex(
            read_text("-", "stdin") if args.hex == ["-"] else " ".join(args.hex), "HEX"
        )
    else:
        raise CliError("no frame given: pass HEX, '-' or --file PATH", USAGE)
    if not data:
        raise CliError("the input is empty", BAD_DATA)
    return data


def _response_api(package: ModuleType, response: list[str]) -> tuple[int, int]:
    api, version = response
    try:
        api_version = int(version)
    except ValueError:
        raise CliError(f"--response {api} {version}: VERSION must be a number", USAGE) from None
    if api.lstrip("-").isdigit():
        return int(api), api_version
    by_name = {info.name.lower(): key for key, info in package.APIS.items()}
    key = by_name.get(api.lower().removesuffix("response").removesuffix("request"))
    if key is None:
        raise CliError(f"--response {api}: no API of that name in {package.__name__}", USAGE)
    return key, api_version


def _frame_json(
    package: ModuleType,
    payload: bytes,
    response_to: tuple[int, int] | None,
    args: argparse.Namespace,
) -> dict[str, Any]:
    if response_to is None:
        frame = protocol_call(package, package.decode_request, payload)
        key, version = frame.api_key, frame.api_version
        header_version = package.request_header_version(key, version)
        head = {
            "kind": "request",
            "apiKey": key,
            "apiName": package.APIS[key].name,
            "apiVersion": version,
        }
    else:
        key, version = response_to
        frame = protocol_call(package, package.decode_response, payload, key, version)
        header_version = package.response_header_version(key, version)
        head = {
            "kind": "response",
            "apiKey": key,
            "apiName": package.APIS[key].name,
            "apiVersion": version,
        }
    return {
        **head,
        "correlationId": frame.correlation_id,
        "header": protocol_call(package, frame.header.to_json, header_version),
        "body": message_json(frame.body, version, package, args),
    }
