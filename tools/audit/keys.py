"""The audit keys this process is configured with (tools/audit/signing.py): the private key it signs heads with,
the public keys it verifies them with, and the legacy HMAC key of heads signed before Ed25519."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from tools.audit.signing import key_id, load_private, parse_verify_keys
from tools.settings import get_settings


def signer() -> Ed25519PrivateKey | None:
    """The private key heads are signed with (QUANTDESK_AUDIT_SIGNING_KEY), or None when none is configured; a
    configured file that cannot be read raises, so no head is written unsigned by mistake."""
    path = get_settings().audit_signing_key
    return _private(path) if path is not None else None


@lru_cache(maxsize=4)
def _private(path: Path) -> Ed25519PrivateKey:
    try:
        return load_private(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"QUANTDESK_AUDIT_SIGNING_KEY: cannot read an Ed25519 private key from {path}: "
                         f"{type(exc).__name__}") from None


def verify_keys() -> dict[str, Ed25519PublicKey]:
    """The public keys by id: QUANTDESK_AUDIT_VERIFY_KEYS, and the signing key's own public key."""
    keys = dict(_public(get_settings().audit_verify_keys))
    private = signer()
    if private is not None:
        keys.setdefault(key_id(private.public_key()), private.public_key())
    return keys


@lru_cache(maxsize=4)
def _public(text: str) -> dict[str, Ed25519PublicKey]:
    return parse_verify_keys(text)


def legacy_key() -> str:
    """QUANTDESK_AUDIT_KEY: the HMAC key of heads signed before Ed25519 ('' when not set)."""
    key = get_settings().audit_key
    return key.get_secret_value() if key is not None else ""
