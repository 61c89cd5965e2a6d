"""Configuration read from the environment, with an explicit override for tests."""
import ipaddress
import logging
import os
import secrets
from datetime import timedelta
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
# The automation rules' switches, and those continuous assignment (scheduled slots, message events)
# needs all on.
AUTOMATION_SWITCHES = ("AUTOMATION_PLANNING_ENABLED", "AUTOMATION_SCHEDULE_EXECUTION_ENABLED",
                       "AUTOMATION_EXECUTION_ENABLED", "ATOMIC_ASSIGNMENT_ENABLED")
CONTINUOUS_ASSIGNMENT = ("AUTOMATION_PLANNING_ENABLED", "AUTOMATION_SCHEDULE_EXECUTION_ENABLED",
                         "ATOMIC_ASSIGNMENT_ENABLED")
EGRESS_KNOBS = ("EGRESS_ALLOW_CIDRS", "EGRESS_PORT", "EGRESS_CA_BUNDLE")


def _flag(value: str) -> bool:
    """Read an environment switch: 1/true/yes/on are on, anything else off."""
    return value.strip().lower() in {"1", "true", "yes", "on"}


def make_private_dir(path: Path) -> Path:
    """Create `path` readable only by its owner (0700), tightening it when it already exists."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _private_file(path: Path) -> bool:
    """Create an empty owner-only (0600) file unless it exists, tightening an existing one.

    Returns True when this call created it. The mode is set at creation (O_EXCL), so the file is
    never readable by others, not even for a moment, whatever the umask.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        path.chmod(0o600)
        return False
    return True


def _instance_secret(name: str, make) -> str:
    """Return a secret kept in instance/, generating it once for a fresh machine."""
    path = make_private_dir(INSTANCE_PATH) / name
    if _private_file(path):
        path.write_text(make())
    return path.read_text().strip()


def _embedded_database() -> str:
    """The default SQLite file under instance/, created owner-only (its -wal/-shm files follow it)."""
    path = make_private_dir(INSTANCE_PATH) / "studio.db"
    _private_file(path)  # SQLite opens an empty file as a new database
    return f"sqlite:///{path}"


def _networks(text: str) -> tuple:
    """Comma-separated address ranges (`10.0.0.0/8,::1/128`), parsed once at start."""
    return tuple(ipaddress.ip_network(part.strip(), strict=False) for part in text.split(",") if part.strip())


def load_config(overrides: dict | None = None, environ=os.environ) -> dict:
    """Build the Flask config from the environment; `overrides` wins over everything."""
    overrides = overrides or {}
    cfg = {
        "REDIS_URL": environ.get("REDIS_URL") or None,
        "MODEL_BASE_URL": environ.get("MODEL_BASE_URL") or None,
        "MODEL_API_KEY": environ.get("MODEL_API_KEY") or None,
        "MODEL_NAME": environ.get("MODEL_NAME") or None,
        "EGRESS_ALLOW_CIDRS": environ.get("EGRESS_ALLOW_CIDRS") or None,
        "EGRESS_PORT": int(environ.get("EGRESS_PORT") or 443),
        "EGRESS_CA_BUNDLE": environ.get("EGRESS_CA_BUNDLE") or None,
        "TRUSTED_PROXIES": int(environ.get("TRUSTED_PROXIES") or 0),
        # /metrics answers these addresses, or anyone with `Authorization: Bearer <METRICS_TOKEN>`.
        "METRICS_ALLOW_CIDRS": _networks(environ.get("METRICS_ALLOW_CIDRS") or "127.0.0.0/8,::1/128"),
        "METRICS_TOKEN": environ.get("METRICS_TOKEN") or None,
        "METRICS_ENABLED": True,  # counting requests; bench/metrics.py compares with it off
        "PASSWORD_HASH_METHOD": "scrypt",
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "WTF_CSRF_TIME_LIMIT": None,
        # Console sessions live in Redis (desk/sessions.py): ended by logout, a password change or
        # deactivation, after an hour without a request, and 12 hours after login in any case.
        "PERMANENT_SESSION_LIFETIME": timedelta(hours=12),
        "SESSION_IDLE_TIMEOUT": timedelta(minutes=60),
        "SESSION_REFRESH_EACH_REQUEST": False,  # the registry slides the idle timeout, not the cookie
        "LOGIN_FAILURE_WINDOW": timedelta(minutes=15),  # desk/signin.py counts failed logins in it
        # hide_parameters: a database error's message (logged with its traceback) never carries
        # the submitted values bound to the statement. No pool pre-ping: a dead connection is
        # found by the statement that meets it, which drops the pool (core.web retries a read).
        "SQLALCHEMY_ENGINE_OPTIONS": {"hide_parameters": True},
        # PostgreSQL's statement_timeout for everything but jobs (each job gets its own RQ timeout)
        # and migrations (none): a request never waits on a lock longer (core.db.engine_options).
        "DB_STATEMENT_TIMEOUT_SECONDS": float(environ.get("DB_STATEMENT_TIMEOUT_SECONDS") or 15),
        # No implicit OPTIONS answers: nothing here is cross-origin, and an `Allow` header would
        # reveal which API paths exist (unsupported methods under /api/ are 404).
        "PROVIDE_AUTOMATIC_OPTIONS": False,
        # Not environment settings: tests shorten them through create_app's overrides.
        "WEBHOOK_RETRY_INTERVALS": (30, 60, 120, 240, 480, 960, 1920),
        "WEBHOOK_LEASE_SECONDS": 60,
        "MODEL_CONNECT_TIMEOUT": 5.0,  # seconds to connect to the model server (core/model.py)
        "MODEL_READ_TIMEOUT": 60.0,  # seconds the model server may stay silent while answering
        "ACTION_TIMEOUT_SECONDS": 10.0,  # a record action's POST, DNS to last byte (spec: about 10 s)
        "GENERATION_WAIT_SECONDS": 20.0,  # POST /generate waits this long, then answers 202 to poll
        "OPEN_API_RATE_LIMIT": 60,  # per application per natural minute (spec); the schema fuzz raises it
        # Workbench panel submissions a minute (docs/decisions.md, "Panel submissions are limited");
        # the workbench benchmark raises them to time 480 submissions.
        "PANEL_RECORDS_PER_MEMBER_PER_MINUTE": 20,
        "PANEL_RECORDS_PER_TENANT_PER_MINUTE": 200,
        # Unset: every fixed-window limit counts in its own window (the spec's natural minutes).
        # Tests set it to count in shorter or longer windows (core.limits.window_seconds).
        "RATE_WINDOW_SECONDS": None,
    }
    for name, default in SWITCHES.items():
        raw = environ.get(name)
        cfg[name] = default if raw is None or raw == "" else _flag(raw)
    if "SQLALCHEMY_DATABASE_URI" not in overrides:
        cfg["SQLALCHEMY_DATABASE_URI"] = environ.get("DATABASE_URL") or _embedded_database()
    if "SECRET_KEY" not in overrides:
        cfg["SECRET_KEY"] = environ.get("SECRET_KEY") or _instance_secret(
            "secret_key", lambda: secrets.token_urlsafe(48))
    if "ENCRYPTION_KEY" not in overrides:
        cfg["ENCRYPTION_KEY"] = environ.get("ENCRYPTION_KEY") or _instance_secret(
            "encryption_key", lambda: Fernet.generate_key().decode())
    cfg.update(overrides)
    return cfg


class ConfigurationError(RuntimeError):
    """A setting that breaks a timing rule between two durations: start-up stops on it."""


def require_shorter(shorter: tuple[str, float], longer: tuple[str, float], why: str) -> None:
    """Refuse to start unless the first duration (what it is, seconds) is shorter than the second,
    naming both values and what would go wrong."""
    (short_name, short), (long_name, long) = shorter, longer
    if not short < long:
        raise ConfigurationError(f"{short_name} is {short:g} s, but it must be shorter than {long_name} "
                                 f"({long:g} s): {why}")


def switches_off(cfg, names: tuple[str, ...]) -> list[str]:
    """Which of the switches `names` are off in the configuration, in order."""
    return [name for name in names if not cfg.get(name)]


def warn_about_egress_knobs(cfg: dict) -> None:
    """Log each development-only egress knob that is set, so it never goes unnoticed."""
    for name in EGRESS_KNOBS:
        if name == "EGRESS_PORT" and cfg.get(name) == 443:
            continue
        if cfg.get(name):
            log.warning("egress test knob %s is set: for tests and development only", name)
