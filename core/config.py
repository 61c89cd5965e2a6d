"""Configuration read from the environment, with an explicit override for tests."""
import logging
import os
import secrets
from pathlib import Path

from cryptography.fernet import Fernet

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
INSTANCE_PATH = PROJECT_ROOT / "instance"

# Platform switches (DESIGN.md §6) and their defaults; docs/decisions.md explains each default.
SWITCHES = {
    "EXTENSIONS_ENABLED": True,
    "OPEN_PLATFORM_ENABLED": True,
    "AUTOMATION_PLANNING_ENABLED": False,
    "AUTOMATION_SCHEDULE_EXECUTION_ENABLED": False,
    "AUTOMATION_EXECUTION_ENABLED": False,
    "ATOMIC_ASSIGNMENT_ENABLED": True,
}
EGRESS_KNOBS = ("EGRESS_ALLOW_CIDRS", "EGRESS_PORT", "EGRESS_CA_BUNDLE")


def _flag(value: str) -> bool:
    """Read an environment switch: 1/true/yes/on are on, anything else off."""
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _instance_secret(name: str, make) -> str:
    """Return a secret kept in instance/, generating it once for a fresh machine."""
    path = INSTANCE_PATH / name
    if not path.exists():
        INSTANCE_PATH.mkdir(parents=True, exist_ok=True)
        path.write_text(make())
        path.chmod(0o600)
    return path.read_text().strip()


def _embedded_database() -> str:
    """The default SQLite file under instance/ (created on a fresh checkout)."""
    INSTANCE_PATH.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{INSTANCE_PATH / 'studio.db'}"


def load_config(overrides: dict | None = None, environ=os.environ) -> dict:
    """Build the Flask config from the environment; `overrides` wins over everything."""
    overrides = overrides or {}
    cfg = {
        "SQLALCHEMY_DATABASE_URI": environ.get("DATABASE_URL") or _embedded_database(),
        "REDIS_URL": environ.get("REDIS_URL") or None,
        "MODEL_BASE_URL": environ.get("MODEL_BASE_URL") or None,
        "MODEL_API_KEY": environ.get("MODEL_API_KEY") or None,
        "MODEL_NAME": environ.get("MODEL_NAME") or None,
        "EGRESS_ALLOW_CIDRS": environ.get("EGRESS_ALLOW_CIDRS") or None,
        "EGRESS_PORT": int(environ.get("EGRESS_PORT") or 443),
        "EGRESS_CA_BUNDLE": environ.get("EGRESS_CA_BUNDLE") or None,
        "TRUSTED_PROXIES": int(environ.get("TRUSTED_PROXIES") or 0),
        "PASSWORD_HASH_METHOD": "scrypt",
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "WTF_CSRF_TIME_LIMIT": None,
        # hide_parameters: a database error's message (logged with its traceback) never carries
        # the submitted values bound to the statement.
        "SQLALCHEMY_ENGINE_OPTIONS": {"pool_pre_ping": True, "hide_parameters": True},
        # No implicit OPTIONS answers: nothing here is cross-origin, and an `Allow` header would
        # reveal which API paths exist (unsupported methods under /api/ are 404).
        "PROVIDE_AUTOMATIC_OPTIONS": False,
        # Not environment settings: tests shorten them through create_app's overrides.
        "WEBHOOK_RETRY_INTERVALS": (30, 60, 120, 240, 480, 960, 1920),
        "WEBHOOK_LEASE_SECONDS": 60,
        "OPEN_API_RATE_LIMIT": 60,  # per application per natural minute (spec); the schema fuzz raises it
    }
    for name, default in SWITCHES.items():
        raw = environ.get(name)
        cfg[name] = default if raw is None or raw == "" else _flag(raw)
    if "SECRET_KEY" not in overrides:
        cfg["SECRET_KEY"] = environ.get("SECRET_KEY") or _instance_secret(
            "secret_key", lambda: secrets.token_urlsafe(48))
    if "ENCRYPTION_KEY" not in overrides:
        cfg["ENCRYPTION_KEY"] = environ.get("ENCRYPTION_KEY") or _instance_secret(
            "encryption_key", lambda: Fernet.generate_key().decode())
    cfg.update(overrides)
    return cfg


def warn_about_egress_knobs(cfg: dict) -> None:
    """Log each development-only egress knob that is set, so it never goes unnoticed."""
    for name in EGRESS_KNOBS:
        if name == "EGRESS_PORT" and cfg.get(name) == 443:
            continue
        if cfg.get(name):
            log.warning("egress test knob %s is set: for tests and development only", name)
