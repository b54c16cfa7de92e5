"""Ed25519 signatures of the audit chains' heads. Writers hold the private key (a PEM file named by
QUANTDESK_AUDIT_SIGNING_KEY); `audit verify` needs only public keys (QUANTDESK_AUDIT_VERIFY_KEYS), which let nobody
sign. A signature names its key (`ed25519:KEY_ID:BASE64`), so old public keys verify old heads after a rotation.
A head signed before Ed25519 carries a bare HMAC-SHA256 (64 hex digits, QUANTDESK_AUDIT_KEY): legacy, checked only
when that key is configured."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

SCHEME = "ed25519"


def head_message(chain: str, seq: int, head_hash: str) -> bytes:
    """The bytes a head's signature covers."""
    return f"quantdesk-audit-head\n{chain}\n{seq}\n{head_hash}".encode()


def public_bytes(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(key: Ed25519PublicKey) -> str:
    """A public key's id: the first 16 hex digits of the SHA-256 of its raw bytes."""
    return hashlib.sha256(public_bytes(key)).hexdigest()[:16]


def public_text(key: Ed25519PublicKey) -> str:
    """A public key as QUANTDESK_AUDIT_VERIFY_KEYS holds it: `KEY_ID:BASE64`."""
    return f"{key_id(key)}:{base64.b64encode(public_bytes(key)).decode()}"


def parse_verify_keys(text: str) -> dict[str, Ed25519PublicKey]:
    """`KEY_ID:BASE64,KEY_ID:BASE64` read as public keys by id; ValueError naming a bad entry (an id that is not
    its key's)."""
    keys: dict[str, Ed25519PublicKey] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        ident, _sep, encoded = item.partition(":")
        try:
            key = Ed25519PublicKey.from_public_bytes(base64.b64decode(encoded, validate=True))
        except ValueError:
            raise ValueError(f"{ident or item!r} is not KEY_ID:BASE64 of an Ed25519 public key") from None
        if key_id(key) != ident:
            raise ValueError(f"{ident!r} is not the id of the key beside it (that key's id is {key_id(key)})")
        keys[ident] = key
    return keys


def load_private(path: Path) -> Ed25519PrivateKey:
    """The signing key in a PEM file `audit keygen` wrote; ValueError when it is not an Ed25519 private key."""
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path} does not hold an Ed25519 private key")
    return key


def write_pair(directory: Path) -> tuple[Path, str]:
    """A new key pair: the private key as `audit-KEY_ID.pem` (mode 0600) in `directory`; its path and the public
    key as `KEY_ID:BASE64`."""
    key = Ed25519PrivateKey.generate()
    public = key.public_key()
    path = directory / f"audit-{key_id(public)}.pem"
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    directory.mkdir(parents=True, exist_ok=True)
    with open(path, "xb", opener=_private_open) as out:
        out.write(pem)
    return path, public_text(public)


def _private_open(name: str, flags: int) -> int:
    """Create the key file readable by its owner only."""
    return os.open(name, flags, 0o600)


def sign(key: Ed25519PrivateKey, chain: str, seq: int, head_hash: str) -> str:
    """The head's signature, naming the key: `ed25519:KEY_ID:BASE64`."""
    signature = key.sign(head_message(chain, seq, head_hash))
    return f"{SCHEME}:{key_id(key.public_key())}:{base64.b64encode(signature).decode()}"


def legacy_hmac(key: str, chain: str, seq: int, head_hash: str) -> str:
    """The HMAC-SHA256 heads carried before Ed25519 (QUANTDESK_AUDIT_KEY)."""
    return hmac.new(key.encode(), f"{chain}\n{seq}\n{head_hash}".encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Check:
    """What a head's signature proved: `valid` (True, False, or None: it could not be checked) and how it reads."""

    valid: bool | None
    label: str


def check(signature: str, chain: str, seq: int, head_hash: str, keys: dict[str, Ed25519PublicKey],
          legacy_key: str = "") -> Check:
    """Check a head's signature against the public keys (and, for a legacy HMAC head, the legacy key)."""
    if not signature:
        return Check(None, "unsigned (no signing key was configured when it was written)")
    scheme, _sep, rest = signature.partition(":")
    if scheme != SCHEME:
        if not legacy_key:
            return Check(None, "legacy HMAC signature not checked (QUANTDESK_AUDIT_KEY is not set)")
        good = hmac.compare_digest(signature, legacy_hmac(legacy_key, chain, seq, head_hash))
        return Check(good, "legacy HMAC signature valid" if good else
                     "not signed with QUANTDESK_AUDIT_KEY (legacy HMAC head)")
    ident, _sep, encoded = rest.partition(":")
    public = keys.get(ident)
    if public is None:
        return Check(None, f"signed with key {ident}, which QUANTDESK_AUDIT_VERIFY_KEYS does not hold")
    try:
        public.verify(base64.b64decode(encoded), head_message(chain, seq, head_hash))
    except (InvalidSignature, ValueError):
        return Check(False, f"not signed by key {ident} (the signature does not match this head)")
    return Check(True, f"head signature valid (key {ident})")
