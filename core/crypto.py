"""Secrets at rest: Fernet encryption keyed by ENCRYPTION_KEY (comma-separated for rotation)."""
import hashlib
import hmac
from functools import lru_cache

from cryptography.fernet import Fernet, MultiFernet
from flask import current_app

DECRYPTED_CACHE_SIZE = 1024  # secrets kept decrypted per process (see decrypt_cached)


@lru_cache(maxsize=8)
def _key_ring(keys: str) -> MultiFernet:
    """The key ring of an ENCRYPTION_KEY value; the first key encrypts, every key decrypts."""
    return MultiFernet([Fernet(k.strip()) for k in keys.split(",") if k.strip()])


def _fernet() -> MultiFernet:
    """The app's key ring."""
    return _key_ring(current_app.config["ENCRYPTION_KEY"])


def encrypt(plain: str) -> str:
    """Encrypt a secret for storage."""
    return _fernet().encrypt(plain.encode()).decode()


def decrypt(token: str) -> str:
    """Decrypt a stored secret."""
    return _fernet().decrypt(token.encode()).decode()


@lru_cache(maxsize=DECRYPTED_CACHE_SIZE)
def _decrypt_with(keys: str, token: str) -> str:
    """`token` decrypted under the key ring `keys`, remembered."""
    return _key_ring(keys).decrypt(token.encode()).decode()


def decrypt_cached(token: str) -> str:
    """Decrypt a stored secret that is read on a hot path (a channel's signing secret).

    The plain value is kept in this process, keyed by the encrypted value and the key ring: a
    changed secret is a new encrypted value and a rotated key ring a new key, so neither is ever
    answered from an old entry; a token that fails to decrypt is not remembered.
    """
    return _decrypt_with(current_app.config["ENCRYPTION_KEY"], token)


def sha256_hex(value: str) -> str:
    """Hex SHA-256 of a string, for tokens stored only as digests."""
    return hashlib.sha256(value.encode()).hexdigest()


def hmac_sha256_hex(secret: str, message: bytes) -> str:
    """Lowercase hex HMAC-SHA256 of `message` under `secret`."""
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
