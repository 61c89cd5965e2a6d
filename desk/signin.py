"""Signing in to the console and changing one's password: the password checks and the login
throttle that guards both.

Failed checks are counted per (account, client address) and per client address, in a rolling
window (LOGIN_FAILURE_WINDOW), by `core.limits.begin_attempt`: each check is counted as a failure
when it begins, atomically with the limit, so concurrent guesses cannot overshoot; a correct
password then takes its own attempt back and clears its pair's failures, so successes never count.
"""
import hashlib

from flask import current_app
from sqlalchemy import func, select

from core.api import ApiError
from core.db import db
from core.limits import Attempt, begin_attempt, forgive_attempt
from core.metrics import LOGINS
from core.redis import get_redis
from desk.models import User
from desk.sessions import active_memberships
from desk.tenancy import set_password

FAILURES_PER_ACCOUNT_AND_ADDRESS = 10
FAILURES_PER_ADDRESS = 100


def _failure_keys(email: str, address: str | None) -> list[str]:
    """The (account, address) pair's failure set, then the address's."""
    address = address or "unknown"
    account = hashlib.sha256(email.lower().encode()).hexdigest()[:32]
    return [f"login-failures:{account}:{address}", f"login-failures:{address}"]


def _begin(keys: list[str]) -> Attempt:
    """Count a password check as a failure, or refuse it: 429 `rate_limited` with `Retry-After`."""
    attempt = begin_attempt(get_redis(), keys, [FAILURES_PER_ACCOUNT_AND_ADDRESS, FAILURES_PER_ADDRESS],
                            current_app.config["LOGIN_FAILURE_WINDOW"])
    if attempt.retry_after:
        LOGINS.labels("throttled").inc()
        raise ApiError("rate_limited", 429, headers={"Retry-After": str(attempt.retry_after)})
    return attempt


def _forgive(keys: list[str], attempt: Attempt) -> None:
    """The password was right: this check is no failure, nor are its pair's earlier ones."""
    pair, address = keys
    forgive_attempt(get_redis(), attempt, [address], clear=[pair])


def sign_in(email: str, password: str, address: str | None) -> User:
    """The user whose e-mail (any case, spaces around ignored) and password these are, with an active
    seat, from the client at `address`.

    Refused before any password is checked once the pair or the address holds its failures: 429
    `rate_limited` with `Retry-After` (nothing counted). A wrong e-mail or password, or no active
    seat, is 401 `invalid_credentials` and counts as a failure; a success clears its pair's failures.
    Opening the session is the caller's.
    """
    email = email.strip().lower()
    keys = _failure_keys(email, address)
    attempt = _begin(keys)
    user = db.session.scalar(select(User).where(func.lower(User.email) == email))
    if user is None or not user.check_password(password) or not active_memberships(user.id):
        LOGINS.labels("failed").inc()
        raise ApiError("invalid_credentials", 401)
    _forgive(keys, attempt)
    return user


def change_password(user: User, current_password: str, new_password: str, address: str | None) -> None:
    """Give `user` a new password once their current one is confirmed, under the login throttle:
    429 `rate_limited` with `Retry-After` (nothing counted), or 401 `invalid_credentials` for a wrong
    current password (a failure). The change ends every session of theirs (`set_password`); flushed,
    the caller commits."""
    keys = _failure_keys(user.email, address)
    attempt = _begin(keys)
    if not user.check_password(current_password):
        LOGINS.labels("failed").inc()
        raise ApiError("invalid_credentials", 401)
    _forgive(keys, attempt)
    set_password(user, new_password)
