"""The pages' languages: Simplified Chinese (the default) and English through Flask-Babel. Which
locale a request uses, the client script's small catalog, and how times (Beijing time, the zone
named) and numbers read in each locale."""
from datetime import datetime
from functools import cached_property

from babel import Locale, support
from flask import Blueprint, Flask, current_app, has_request_context, jsonify, request, session
from flask_babel import Babel, Domain, force_locale, format_datetime, format_decimal, get_locale, gettext as _
from flask_babel import lazy_gettext as _l

from core.api import ApiError

# Babel's locale ids with each language's own name (the switcher shows it in that language).
LOCALES = {"zh_CN": "简体中文", "en": "English"}
DEFAULT_LOCALE = "zh_CN"
TIMEZONE = "Asia/Shanghai"
# app.extensions key: a function answering the signed-in user's saved locale or None. The desk,
# which owns users, hands it over at wiring time.
SAVED_LOCALE = "core.i18n.saved_locale"
LOCALE_SESSION_KEY = "locale"  # the choice of someone not signed in, made with the switcher
# The client script's messages (static/js/app.js reads them from /i18n/<lang>.json).
CLIENT_MESSAGES = {
    "copied": _l("Copied"),
    "copy_failed": _l("Copy failed: select the text"),
    "unfilled": _l("Fill in %(name)s before sending: this conversation has no value for it."),
}

_BY_BABEL_NAME = {str(Locale.parse(locale)): locale for locale in LOCALES}  # zh_Hans_CN → zh_CN


class CatalogDomain(Domain):
    """Flask-Babel's message domain, finding each language's catalog under its LOCALES id: Babel
    names zh_CN zh_Hans_CN, for which gettext would look in zh_Hans_CN/ and zh/ only."""

    def get_translations(self):
        """The current request's catalog (English, the source language, has none)."""
        locale = get_locale()
        if locale is None:
            return support.NullTranslations()
        name = _BY_BABEL_NAME.get(str(locale), str(locale))
        if name not in self.cache:
            (directory,) = self.translation_directories
            self.cache[name] = support.Translations.load(directory, [name], self.domain[0])
        return self.cache[name]


class CatalogBabel(Babel):
    """Flask-Babel with the domain above."""

    @cached_property
    def domain_instance(self):
        """The app's one message domain."""
        return CatalogDomain(domain=self.domain)


babel = CatalogBabel()
bp = Blueprint("i18n", __name__)


def N_(text: str) -> str:
    """Mark text for the catalogs (pybabel extracts N_ like gettext) and leave it as it is: for
    text declared outside a request and translated where it is shown, with `_(text)`."""
    return text


def shown_provenance(text: str | None, library: str, license: str) -> str | None:
    """A built-in library's stored origin (`<library>: <item>`) or licence, stored in English, for
    people: the library's own words in the page's language, anything else as it is."""
    if text == license:
        return _(license)
    if text and text.startswith(f"{library}: "):
        return _("%(library)s: %(item)s", library=_(library), item=text[len(library) + 2:])
    return text


def language_tag(locale: str) -> str:
    """The BCP 47 tag of a Babel locale id, for `lang` attributes: zh_CN → zh-CN."""
    return locale.replace("_", "-")


def locale_of(tag: str | None) -> str | None:
    """The supported Babel locale id a submitted tag or id names (zh-CN, zh_CN, en), else None."""
    found = (tag or "").replace("-", "_")
    return found if found in LOCALES else None


def select_locale() -> str:
    """The user's saved choice, else the switcher's choice in this session, else the browser's
    Accept-Language, else Simplified Chinese."""
    if not has_request_context():
        return DEFAULT_LOCALE
    saved = current_app.extensions[SAVED_LOCALE]()
    if saved in LOCALES:
        return saved
    if session.get(LOCALE_SESSION_KEY) in LOCALES:
        return session[LOCALE_SESSION_KEY]
    wanted = request.accept_languages.best_match([language_tag(locale) for locale in LOCALES])
    return locale_of(wanted) or DEFAULT_LOCALE


def current_locale() -> str:
    """The LOCALES id this request's pages are in."""
    return _BY_BABEL_NAME[str(get_locale())]


def beijing(moment: datetime | None, seconds: bool = False, with_zone: bool = True) -> str:
    """A moment for people, in Beijing time with the zone named: `2026-11-22 21:35 Beijing time`
    (`… 北京时间`); without it only where a column's heading names the zone. Digits in ISO order in
    both languages, as the date inputs take them."""
    if moment is None:
        return ""
    text = format_datetime(moment, "yyyy-MM-dd HH:mm:ss" if seconds else "yyyy-MM-dd HH:mm")
    return _("%(time)s Beijing time", time=text) if with_zone else text


def beijing_iso(moment: str | None) -> str:
    """An ISO-8601 time (as the JSON APIs give it) for people, to the second: rolling quotas free
    up at any second."""
    return beijing(datetime.fromisoformat(moment), seconds=True) if moment else ""


def number(value) -> str:
    """A number for people in the page's locale: whole numbers without decimals, others with at
    most two; anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return format_decimal(value, "#,##0.##")


@bp.get("/i18n/<tag>.json")
def client_catalog(tag: str):
    """The client script's messages in one language (cacheable: the language is in the URL)."""
    locale = locale_of(tag)
    if locale is None:
        raise ApiError("not_found", 404)
    with force_locale(locale):
        response = jsonify({key: str(text) for key, text in CLIENT_MESSAGES.items()})
    response.cache_control.public = True
    response.cache_control.max_age = 3600
    return response


def init_i18n(app: Flask) -> None:
    """Flask-Babel with the catalogs under translations/, Beijing time, the template helpers."""
    app.config.setdefault("BABEL_DEFAULT_LOCALE", DEFAULT_LOCALE)
    app.config.setdefault("BABEL_DEFAULT_TIMEZONE", TIMEZONE)
    app.extensions.setdefault(SAVED_LOCALE, lambda: None)
    babel.init_app(app, locale_selector=select_locale)
    app.jinja_env.filters["beijing"] = beijing
    app.jinja_env.filters["beijing_seconds"] = beijing_iso
    app.jinja_env.filters["number"] = number

    @app.context_processor
    def languages() -> dict:
        current = current_locale()
        return {"html_lang": language_tag(current), "current_locale": current, "locales": LOCALES}

    app.register_blueprint(bp)
