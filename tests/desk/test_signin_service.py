"""The sign-in service itself throttles failed password checks, whoever calls it (no page in between):
10 failures per account and address, 100 per address; the password change goes through the same."""
import pytest

from core.api import ApiError
from desk.signin import FAILURES_PER_ACCOUNT_AND_ADDRESS, FAILURES_PER_ADDRESS, change_password, sign_in
from tests.conftest import PASSWORD

ADDRESS, ELSEWHERE = "203.0.113.9", "198.51.100.7"
NEW_PASSWORD = "a-brand-new-passphrase"


def _refusal(call, *args) -> ApiError:
    with pytest.raises(ApiError) as refused:
        call(*args)
    return refused.value


def _fail(email: str, times: int, address: str = ADDRESS) -> None:
    for _ in range(times):
        assert _refusal(sign_in, email, "guess", address).code == "invalid_credentials"


def _throttled(err: ApiError) -> bool:
    return (err.code, err.status) == ("rate_limited", 429) and int(err.headers["Retry-After"]) > 0


def test_the_right_password_signs_in(admin):
    assert sign_in(f"  {admin.user.email.upper()} ", PASSWORD, ADDRESS).id == admin.user_id


def test_after_the_allowed_failures_even_the_right_password_is_refused(admin):
    _fail(admin.user.email, FAILURES_PER_ACCOUNT_AND_ADDRESS)
    assert _throttled(_refusal(sign_in, admin.user.email, PASSWORD, ADDRESS))
    assert sign_in(admin.user.email, PASSWORD, ELSEWHERE).id == admin.user_id


def test_one_address_failing_across_accounts_is_throttled(admin):
    for n in range(FAILURES_PER_ADDRESS):
        assert _refusal(sign_in, f"user{n}@test.example", "guess", ADDRESS).code == "invalid_credentials"
    assert _throttled(_refusal(sign_in, admin.user.email, PASSWORD, ADDRESS))


def test_a_success_takes_its_attempt_back_and_clears_the_failures_before_it(admin):
    for _ in range(2):
        _fail(admin.user.email, FAILURES_PER_ACCOUNT_AND_ADDRESS - 1)
        assert sign_in(admin.user.email, PASSWORD, ADDRESS).id == admin.user_id


def test_wrong_current_passwords_throttle_the_password_change(admin):
    user = admin.user
    for _ in range(FAILURES_PER_ACCOUNT_AND_ADDRESS):
        assert _refusal(change_password, user, "guess", NEW_PASSWORD, ADDRESS).code == "invalid_credentials"
    assert _throttled(_refusal(change_password, user, PASSWORD, NEW_PASSWORD, ADDRESS))
    assert user.check_password(PASSWORD)


def test_the_right_current_password_changes_it(admin):
    change_password(admin.user, PASSWORD, NEW_PASSWORD, ADDRESS)
    assert admin.user.check_password(NEW_PASSWORD)
