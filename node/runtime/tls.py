"""TLS for listeners, peer connections and tools, configured with Kafka's ``ssl.*`` names (PEM only).

:func:`tls_settings` reads the ``ssl.*`` keys of a properties mapping into :class:`TlsSettings`;
:func:`server_context` and :func:`client_context` build the :class:`ssl.SSLContext` of each side. Any
problem (a missing file, unreadable PEM, a key that does not match its certificate, a setting Kafka
refuses) raises :class:`TlsConfigError` with one line naming the setting.

Kafka's meaning of each setting, kept here:
- ``ssl.keystore.type`` / ``ssl.truststore.type`` default to JKS in Kafka; kraftwire reads PEM only, so
  the type must be written ``PEM`` whenever a keystore or truststore is given.
- the keystore is either ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key`` (PEM text in the
  properties file) or ``ssl.keystore.location`` (one PEM file holding the private key and the chain);
  ``ssl.key.password`` decrypts an encrypted private key; ``ssl.keystore.password`` is refused with PEM.
- the truststore is ``ssl.truststore.certificates`` (PEM text) or ``ssl.truststore.location`` (a PEM
  file of trusted certificates).
- ``ssl.client.auth`` is ``none`` (Kafka's default), ``requested`` or ``required``.
- ``ssl.endpoint.identification.algorithm`` defaults to ``https`` (the server's certificate must name
  the host or IP address dialled); an empty value turns the check off.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from dataclasses import dataclass, field

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
SSL_KEYS = (
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.endpoint.identification.algorithm",
)
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


class TlsConfigError(ValueError):
    """A TLS setting that cannot be used; the message names it."""


@dataclass(frozen=True)
class TlsSettings:
    # the certificate chain then the private key, PEM text; kept out of repr (and so out of logs)
    key_chain_pem: str | None = field(default=None, repr=False)
    keystore_location: str | None = None
    key_password: str | None = field(default=None, repr=False)
    trust_pem: str | None = None
    truststore_location: str | None = None
    client_auth: str = "none"
    check_hostname: bool = True

    @property
    def has_keystore(self) -> bool:
        return self.keystore_location is not None or self.key_chain_pem is not None


def normalise_pem(text: str) -> str:
    """PEM text as OpenSSL reads it. A properties value holds PEM on one line (or continued lines), so
    the base64 body may come with spaces or without line breaks; rebuild 64-column blocks."""
    blocks = []
    for label, body in _PEM_BLOCK.findall(text):
        if (
            ":" in body
        ):  # a traditional encrypted key's "Proc-Type:" headers; Kafka reads PKCS#8 only
            raise TlsConfigError(f"{label} has PEM headers; write the key as PKCS#8")
        data = re.sub(r"\s+", "", body)
        lines = "\n".join(data[i : i + 64] for i in range(0, len(data), 64))
        blocks.append(f"-----BEGIN {label}-----\n{lines}\n-----END {label}-----\n")
    if not blocks:
        raise TlsConfigError("no PEM block (-----BEGIN ...-----) found")
    return "".join(blocks)


def tls_settings(props: dict[str, str], source: str) -> TlsSettings:
    """The ``ssl.*`` keys of ``props`` (other keys are ignored), checked as Kafka checks them."""

    def fail(message: str) -> TlsConfigError:
        return TlsConfigError(f"{source}: {message}")

    get = props.get
    for key in ("ssl.keystore.type", "ssl.truststore.type"):
        store = key.split(".")[1]
        given = any(k.startswith(f"ssl.{store}.") and k != key for k in props)
        if given and get(key, "JKS").upper() != "PEM":
            raise fail(
                f"{key}={get(key, 'JKS (the default)')}: kraftwire reads PEM only; set {key}=PEM"
            )
    if get("ssl.keystore.password"):
        raise fail(
            "SSL key store password cannot be specified with PEM format, only key password may be"
            " specified (ssl.keystore.password)"
        )
    if get("ssl.truststore.password"):
        raise fail("ssl.truststore.password cannot be specified with PEM format")
    chain, key_pem, location = (
        get("ssl.keystore.certificate.chain"),
        get("ssl.keystore.key"),
        get("ssl.keystore.location"),
    )
    if key_pem and not chain:
        raise fail("SSL private key is specified, but certificate chain is not specified")
    if chain and not key_pem:
        raise fail("SSL certificate chain is specified, but private key is not specified")
    if key_pem and location:
        raise fail("Both SSL key store location and separate private key are specified")
    trust, trust_location = get("ssl.truststore.certificates"), get("ssl.truststore.location")
    if trust and trust_location:
        raise fail("both ssl.truststore.location and ssl.truststore.certificates are specified")
    client_auth = get("ssl.client.auth", "none").lower()
    if client_auth not in CLIENT_AUTH:
        raise fail(f"invalid ssl.client.auth={client_auth!r}: use required, requested or none")
    algorithm = get("ssl.endpoint.identification.algorithm", "https")
    if algorithm.lower() not in ("https", ""):
        raise fail(f"invalid ssl.endpoint.identification.algorithm={algorithm!r}: https or empty")
    try:
        return TlsSettings(
            key_chain_pem=normalise_pem(chain) + normalise_pem(key_pem) if chain and key_pem else None,
            keystore_location=location or None,
            key_password=get("ssl.key.password") or None,
            trust_pem=normalise_pem(trust) if trust else None,
            truststore_location=trust_location or None,
            client_auth=client_auth,
            check_hostname=algorithm.lower() == "https",
        )
    except TlsConfigError as exc:
        raise fail(f"ssl.keystore/truststore PEM text: {exc}") from None


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """A listener's context: it presents the keystore and, with client auth, checks the client's."""
    if not settings.has_keystore:
        raise TlsConfigError(
            "an SSL listener needs a keystore (ssl.keystore.location, or"
            " ssl.keystore.certificate.chain and ssl.keystore.key)"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_keystore(context, settings)
    context.verify_mode = CLIENT_AUTH[settings.client_auth]
    if settings.client_auth != "none":
        _load_truststore(context, settings, "ssl.client.auth=" + settings.client_auth)
    return context


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """A connecting side's context: it checks the server against the truststore (and its name unless
    ``ssl.endpoint.identification.algorithm`` is empty) and presents the keystore when there is one.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = settings.check_hostname
    _load_truststore(context, settings, "an SSL client")
    if settings.has_keystore:
        _load_keystore(context, settings)
    return context


def _load_truststore(context: ssl.SSLContext, settings: TlsSettings, needed_by: str) -> None:
    try:
        if settings.trust_pem is not None:
            context.load_verify_locations(cadata=settings.trust_pem)
        elif settings.truststore_location is not None:
            context.load_verify_locations(cafile=settings.truststore_location)
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    except FileNotFoundError:
        raise TlsConfigError(
            f"ssl.truststore.location: no such file {settings.truststore_location}"
        ) from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise TlsConfigError(f"truststore unreadable ({needed_by}): {_reason(exc)}") from None


def _load_keystore(context: ssl.SSLContext, settings: TlsSettings) -> None:
    password = settings.key_password
    if settings.keystore_location is not None:
        _load_chain(context, settings.keystore_location, password, "ssl.keystore.location")
        return
    assert settings.key_chain_pem is not None
    # ssl loads a certificate chain from a file only: a private temporary file, removed at once.
    handle, path = tempfile.mkstemp(prefix="kraftwire-keystore-", suffix=".pem")
    try:
        with os.fdopen(handle, "w", encoding="ascii") as f:
            f.write(settings.key_chain_pem)
        _load_chain(context, path, password, "ssl.keystore.certificate.chain/ssl.keystore.key")
    finally:
        os.unlink(path)


def _load_chain(context: ssl.SSLContext, path: str, password: str | None, setting: str) -> None:
    if not os.path.isfile(path):
        raise TlsConfigError(f"{setting}: no such file {path}")
    try:
        context.load_cert_chain(path, password=password or "")
    except ssl.SSLError as exc:
        reason = _reason(exc)
        if "key values mismatch" in reason:
            raise TlsConfigError(
                f"{setting}: the private key does not match the certificate"
            ) from None
        if _encrypted(path):
            problem = "does not open it" if password else "is not set"
            raise TlsConfigError(
                f"{setting}: the private key is encrypted and ssl.key.password {problem}"
            ) from None
        raise TlsConfigError(f"{setting}: cannot load key and certificate: {reason}") from None


def _encrypted(path: str) -> bool:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return "-----BEGIN ENCRYPTED PRIVATE KEY-----" in f.read()
    except OSError:
        return False


def _reason(exc: BaseException) -> str:
    """OpenSSL's reason (``KEY_VALUES_MISMATCH``) as words, else the error's text."""
    reason = getattr(exc, "reason", None)
    return str(reason or exc).lower().replace("_", " ")
