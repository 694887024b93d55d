"""Helpers for the serving tests: a gate around the model, metrics scraping, TLS files."""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
import threading
from pathlib import Path

import pytest


class Gate:
    """Wraps `Translator.load` so tests can hold model calls (warm-up included) at will.

    `calls` records the sentences of every model call (the sources of an
    `align` call); `started` is set when a call begins; while `is_open` is
    cleared, calls wait.
    """

    def __init__(self):
        self.is_open = threading.Event()
        self.is_open.set()
        self.started = threading.Event()
        self.calls: list[list[str]] = []

    def close(self) -> None:
        self.started.clear()
        self.is_open.clear()

    def open(self) -> None:
        self.is_open.set()

    def loader(self, path):
        from nmt.inference.translator import Translator

        return GatedTranslator(Translator.load(path), self)


class GatedTranslator:
    def __init__(self, inner, gate: Gate):
        self.inner, self._gate, self.info = inner, gate, inner.info

    def translate(self, sentences, options=None):
        self._pass(sentences)
        return self.inner.translate(sentences, options)

    def align(self, sources, targets):
        self._pass(sources)
        return self.inner.align(sources, targets)

    def _pass(self, sentences) -> None:
        self._gate.calls.append(list(sentences))
        self._gate.started.set()
        if not self._gate.is_open.wait(60):
            raise TimeoutError("the test gate stayed closed")


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture(scope="module")
def module_gate() -> Gate:
    """One gate for a module-scoped server."""
    return Gate()


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: `(cert.pem, key.pem)`."""
    out = tmp_path_factory.mktemp("tls")
    cert, key = out / "cert.pem", out / "key.pem"
    try:
        _self_signed_with_cryptography(cert, key)
    except ImportError:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
             "-keyout", str(key), "-out", str(cert)],
            check=True, capture_output=True)
    return cert, key


def _self_signed_with_cryptography(cert_path: Path, key_path: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    san = x509.SubjectAlternativeName(
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(san, critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
