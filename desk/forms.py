"""Forms of the desk's own pages (CSRF-protected by Flask-WTF)."""
from flask_wtf import FlaskForm
from wtforms import EmailField, HiddenField, PasswordField, RadioField
from wtforms.validators import DataRequired, EqualTo, Length

from core.i18n import LOCALES
from desk.tenancy import PASSWORD_MAX, PASSWORD_MIN


class LoginForm(FlaskForm):
    """Email and password."""

    email = EmailField("Email", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=200)])


class SelectTenantForm(FlaskForm):
    """The tenant to work in."""

    tenant_id = HiddenField(validators=[DataRequired()])


class LogoutForm(FlaskForm):
    """Only the CSRF token: logging out is a POST."""


class ChangePasswordForm(FlaskForm):
    """The current password and the new one twice."""

    current_password = PasswordField("Current password", validators=[DataRequired(), Length(max=PASSWORD_MAX)])
    new_password = PasswordField("New password", validators=[
        DataRequired(), Length(min=PASSWORD_MIN, message=f"Use at least {PASSWORD_MIN} characters."),
        Length(max=PASSWORD_MAX, message=f"Use at most {PASSWORD_MAX} characters.")])
    confirm_password = PasswordField("New password again", validators=[
        DataRequired(), EqualTo("new_password", message="The two new passwords differ.")])


class AccountForm(FlaskForm):
    """The user's own settings: the pages' language."""

    locale = RadioField(choices=list(LOCALES.items()), validators=[DataRequired()])
