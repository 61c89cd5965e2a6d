"""Forms of the desk's own pages (CSRF-protected by Flask-WTF)."""
from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from wtforms import EmailField, HiddenField, PasswordField, RadioField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, EqualTo, Length

from core.i18n import LOCALES
from desk.tenancy import PASSWORD_MAX, PASSWORD_MIN


class LoginForm(FlaskForm):
    """Email and password."""

    email = EmailField(_l("Email"), validators=[DataRequired(), Length(max=254)])
    password = PasswordField(_l("Password"), validators=[DataRequired(), Length(max=200)])


class SelectTenantForm(FlaskForm):
    """The tenant to work in."""

    tenant_id = HiddenField(validators=[DataRequired()])


class LogoutForm(FlaskForm):
    """Only the CSRF token: logging out is a POST."""


class ChangePasswordForm(FlaskForm):
    """The current password and the new one twice."""

    current_password = PasswordField(_l("Current password"), validators=[DataRequired(), Length(max=PASSWORD_MAX)])
    # WTForms fills in %(min)s and %(max)s.
    new_password = PasswordField(_l("New password"), validators=[
        DataRequired(), Length(min=PASSWORD_MIN, message=_l("Use at least %(min)s characters.")),
        Length(max=PASSWORD_MAX, message=_l("Use at most %(max)s characters."))])
    confirm_password = PasswordField(_l("New password again"), validators=[
        DataRequired(), EqualTo("new_password", message=_l("The two new passwords differ."))])


class AccountForm(FlaskForm):
    """The user's own settings: the pages' language."""

    locale = RadioField(choices=[SelectChoice(locale, name) for locale, name in LOCALES.items()],
                        validators=[DataRequired()])
