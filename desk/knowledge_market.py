"""Built-in knowledge articles of the template market; importing one creates a draft document in
the page's language.

The articles, origin and licence are written here in English and marked with `N_` for the
catalogs: the constants stay English whatever the language (each import stores ORIGIN and
LICENSE as written, and code compares them), and `localized` and `shown` translate them for the
page that lists or imports them."""
from flask_babel import gettext as _

from core.i18n import N_, shown_provenance

ORIGIN = N_("Custom Studio built-in knowledge library")
LICENSE = N_("CC0 1.0 — free to use, modify and share, no attribution required")

ARTICLES = [
    {"slug": "returns-and-refunds", "title": N_("Returns and refunds: what to check"),
     "summary": N_("The questions to ask and the order of steps before promising a return or refund."),
     "body": N_(
         "Before promising a return or refund, confirm four things with the customer:\n\n"
         "1. The order number and the item concerned.\n"
         "2. The reason: damaged, wrong item, not as described, or changed mind.\n"
         "3. The delivery date, to check the return window of the shop's policy.\n"
         "4. Photos when the item arrived damaged.\n\n"
         "Tell the customer what happens next and when: a pickup or a return label, the inspection, "
         "then the refund to the original payment method. Never promise a date the payment provider "
         "controls; say that banks usually need a few business days.\n\n"
         "Write the outcome in a private note so that a colleague can continue without asking again.")},
    {"slug": "delayed-delivery", "title": N_("Handling a delayed delivery"),
     "summary": N_("Acknowledge, check the tracking, give a realistic next step and follow up."),
     "body": N_(
         "When a parcel is late:\n\n"
         "- Acknowledge the delay and apologise once, without blaming the carrier.\n"
         "- Check the tracking status and the last scan date before answering.\n"
         "- If the parcel has not moved for three business days, open an investigation with the carrier "
         "and tell the customer you did.\n"
         "- If the tracking says delivered but the customer has nothing, ask them to check with neighbours, "
         "the building's reception and nearby parcel lockers, then escalate.\n\n"
         "Give one concrete next step and the time you will come back with news, and keep that promise.")},
    {"slug": "identity-check", "title": N_("Verifying identity before account changes"),
     "summary": N_("What to ask before changing an address, e-mail or payment detail on someone's behalf."),
     "body": N_(
         "Change account details only for the account holder. Before changing an e-mail address, phone "
         "number, delivery address or payment detail, verify two of the following:\n\n"
         "- the e-mail address or phone number on file, confirmed by a code sent to it;\n"
         "- a recent order number and its amount;\n"
         "- the postcode of the billing address.\n\n"
         "Never ask for a full card number, a password or a one-time code the customer received from their "
         "bank. If the verification fails, explain politely that you cannot make the change in this "
         "conversation and offer the self-service page instead.")},
    {"slug": "de-escalation", "title": N_("Calming an upset customer"),
     "summary": N_("Five steps that turn an angry conversation into a solvable problem."),
     "body": N_(
         "1. Let the customer finish. Do not interrupt or correct details yet.\n"
         "2. Name the feeling and the problem: \"I understand it is frustrating that the order is still "
         "missing.\"\n"
         "3. Take ownership of the next step, even when another team caused the issue.\n"
         "4. Offer a choice where you can (a replacement or a refund, a call back now or tomorrow): "
         "choice gives back a sense of control.\n"
         "5. Summarise what will happen and by when.\n\n"
         "If the customer becomes abusive, warn once that you will end the conversation, then do so and "
         "record what happened in a private note.")},
    {"slug": "handover-notes", "title": N_("Writing a good handover note"),
     "summary": N_("A private note format that lets the next agent continue without asking again."),
     "body": N_(
         "A handover note is a private note that answers three questions in three lines:\n\n"
         "- What does the customer want? (their words, briefly)\n"
         "- What has been done? (checks made, promises given, with dates)\n"
         "- What is the next step, and who owns it?\n\n"
         "Include order numbers and references, never passwords, card numbers or verification codes. "
         "Write facts rather than opinions about the customer. Update the note when the plan changes "
         "instead of adding a contradicting one.")},
]


def find_article(slug: str) -> dict | None:
    """The article with this slug."""
    return next((article for article in ARTICLES if article["slug"] == slug), None)


def localized(article: dict) -> dict:
    """The article in the page's language: its title, summary and text from the catalog."""
    title, summary, body = article["title"], article["summary"], article["body"]  # not in _(): no msgids
    return {**article, "title": _(title), "summary": _(summary), "body": _(body)}


def shown(text: str | None) -> str | None:
    """An imported document's stored origin or licence, for people."""
    return shown_provenance(text, ORIGIN, LICENSE)
