"""``--command-config FILE`` for every tool that connects to a node, as Kafka's tools take it: a
properties file with the client side of the connection settings.

``security.protocol`` is ``PLAINTEXT`` (Kafka's default) or ``SSL``; with SSL the ``ssl.*`` settings
(:mod:`.tls`) name the truststore that must have signed the nodes' certificates and, for a listener
with ``ssl.client.auth=required``, the tool's own keystore. Other keys are left to whoever else reads
the file (``quorum add-controller`` reads the new controller's settings from it).
"""

from __future__ import annotations

import argparse
import ssl

from kraftwire.node.storage.properties import parse_properties

from .client import use_tls
from .tls import TlsConfigError, client_context, tls_settings


class CommandConfigError(ValueError):
    """The --command-config file cannot be read or names settings that cannot be used."""


def add_command_config(
    parser: argparse.ArgumentParser, *aliases: str, default: object = None, help: str = ""
) -> None:
    """Add ``--command-config FILE`` (and ``aliases``) to ``parser``; the value is ``command_config``."""
    parser.add_argument(
        *aliases,
        "--command-config",
        dest="command_config",
        metavar="FILE",
        default=default,
        help=help
        or "client settings: security.protocol=SSL and the ssl.truststore.* / ssl.keystore.* files",
    )


def client_tls(path: str) -> ssl.SSLContext | None:
    """The TLS context the settings in ``path`` ask for, or None for PLAINTEXT."""
    try:
        with open(path, encoding="utf-8") as f:
            props = parse_properties(f.read(), path)
    except OSError as exc:
        raise CommandConfigError(f"cannot read {path}: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CommandConfigError(str(exc)) from None
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol == "PLAINTEXT":
        return None
    if protocol != "SSL":
        raise CommandConfigError(
            f"{path}: security.protocol={protocol} is not supported (PLAINTEXT or SSL)"
        )
    try:
        return client_context(tls_settings(props, path))
    except TlsConfigError as exc:
        message = str(exc)
        raise CommandConfigError(message if message.startswith(path) else f"{path}: {message}")


def apply_command_config(path: str | None) -> None:
    """Make every connection this process opens use the settings in ``path`` (nothing for None)."""
    if path is not None:
        use_tls(client_tls(path))
