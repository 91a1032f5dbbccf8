"""A throwaway certificate authority and certificates for ``cluster up --tls`` and the tests.

Made with the ``openssl`` command line (kraftwire pins no crypto package): one CA, then per name an EC
P-256 key and a certificate signed by the CA, valid two days, for both server and client use, naming
127.0.0.1 and ::1 (IP SANs) and localhost. Each name gets ``NAME.pem``: its private key (PKCS#8) then
its certificate, the one-file PEM keystore that ``ssl.keystore.location`` reads; ``ca.pem`` is the
truststore. Nothing here is fit for anything but a local demo.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess

DAYS = "2"
LOOPBACK_NAMES = "IP:127.0.0.1,IP:::1,DNS:localhost"
_EXTENSIONS = (
    "basicConstraints=critical,CA:FALSE\n"
    "keyUsage=critical,digitalSignature,keyEncipherment\n"
    "extendedKeyUsage=serverAuth,clientAuth\n"
    "subjectAltName={names}\n"
    "subjectKeyIdentifier=hash\n"
    "authorityKeyIdentifier=keyid,issuer\n"
)


class CertificateError(RuntimeError):
    """openssl is missing or refused; the message carries its one-line complaint."""


def _openssl(*args: str) -> None:
    if shutil.which("openssl") is None:
        raise CertificateError("the openssl command is needed to make test certificates")
    done = subprocess.run(["openssl", *args], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise CertificateError(f"openssl {args[0]}: {last}")


def make_ca(directory: str, name: str = "kraftwire-test-ca") -> tuple[str, str]:
    """(certificate, key) paths of a new CA in ``directory``."""
    cert, key = os.path.join(directory, "ca.pem"), os.path.join(directory, "ca.key")
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", cert, "-days", DAYS, "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    os.chmod(key, 0o600)
    return cert, key


def make_keystore(
    directory: str, name: str, ca: tuple[str, str], names: str = LOOPBACK_NAMES
) -> str:
    """``directory/NAME.pem``: a new private key and its certificate signed by ``ca``, naming
    ``names`` (subjectAltName syntax)."""
    key = os.path.join(directory, f"{name}.key")
    request = os.path.join(directory, f"{name}.csr")
    cert = os.path.join(directory, f"{name}.crt")
    extensions = os.path.join(directory, f"{name}.ext")
    with open(extensions, "w") as f:
        f.write(_EXTENSIONS.format(names=names))
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", request, "-subj", f"/CN={name}",
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", request, "-CA", ca[0], "-CAkey", ca[1], "-days", DAYS,
        "-set_serial", str(secrets.randbits(63)), "-extfile", extensions, "-out", cert,
    )  # fmt: skip
    keystore = os.path.join(directory, f"{name}.pem")
    with open(keystore, "w") as out, open(key) as k, open(cert) as c:
        out.write(k.read() + c.read())
    os.chmod(keystore, 0o600)
    for path in (key, request, cert, extensions):
        os.unlink(path)
    return keystore


def make_pki(directory: str, names: list[str]) -> dict[str, str]:
    """A CA and one keystore per name in ``directory`` (made if needed); name -> keystore path, plus
    ``"ca"`` -> the CA certificate (the truststore)."""
    os.makedirs(directory, exist_ok=True)
    ca = make_ca(directory)
    paths = {name: make_keystore(directory, name, ca) for name in names}
    paths["ca"] = ca[0]
    return paths
