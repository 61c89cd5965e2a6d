"""Forms of the desk's own pages (CSRF-protected by Flask-WTF)."""
from flask_wtf import FlaskForm
from wtforms import EmailField, HiddenField, PasswordField
from wtforms.validators import DataRequired, Length


class LoginForm(FlaskForm):
    """Email and password."""

    email = EmailField("Email", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=200)])


class SelectTenantForm(FlaskForm):
    """The tenant to work in."""

    tenant_id = HiddenField(validators=[DataRequired()])


class LogoutForm(FlaskForm):
    """Only the CSRF token: logging out is a POST."""
