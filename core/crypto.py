"""Secrets at rest: Fernet encryption keyed by ENCRYPTION_KEY (comma-separated for rotation)."""
import hashlib
import hmac

from cryptography.fernet import Fernet, MultiFernet
from flask import current_app


def _fernet() -> MultiFernet:
    """The key ring; the first key encrypts, every key decrypts."""
    keys = [k.strip() for k in current_app.config["ENCRYPTION_KEY"].split(",") if k.strip()]
    return MultiFernet([Fernet(k) for k in keys])


def encrypt(plain: str) -> str:
    """Encrypt a secret for storage."""
    return _fernet().encrypt(plain.encode()).decode()


def decrypt(token: str) -> str:
    """Decrypt a stored secret."""
    return _fernet().decrypt(token.encode()).decode()


def sha256_hex(value: str) -> str:
    """Hex SHA-256 of a string, for tokens stored only as digests."""
    return hashlib.sha256(value.encode()).hexdigest()


def hmac_sha256_hex(secret: str, message: bytes) -> str:
    """Lowercase hex HMAC-SHA256 of `message` under `secret`."""
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
