"""Built-in quick replies of the template market, each in Simplified Chinese and in English (both
offered whatever the page's language: a tenant may serve customers in either); importing one makes
it the tenant's own (it keeps its origin and licence).

The origin and licence are stored in English with each import and marked with `N_` for the
catalogs; `shown` translates them for the page."""

from core.i18n import N_, shown_provenance

ORIGIN = N_("Custom Studio built-in quick replies")
LICENSE = N_("CC0 1.0 — free to use, modify and share, no attribution required")
LANGUAGES = {"zh-CN": "中文（简体）", "en": "English"}

REPLIES = [
    {"slug": "greeting-zh", "lang": "zh-CN", "title": "问候",
     "body": "您好，我是客服，很高兴为您服务。请问有什么可以帮您？"},
    {"slug": "greeting-en", "lang": "en", "title": "Greeting",
     "body": "Hello, thank you for contacting us. How can I help you today?"},
    {"slug": "order-number-zh", "lang": "zh-CN", "title": "询问订单号",
     "body": "为了帮您查询，请提供您的订单号（可在“我的订单”中找到）。"},
    {"slug": "order-number-en", "lang": "en", "title": "Ask for the order number",
     "body": "To look into this, could you send me your order number? You will find it under “My orders”."},
    {"slug": "delay-zh", "lang": "zh-CN", "title": "物流延误致歉",
     "body": "非常抱歉您的包裹延误了。我已联系快递公司核实，会在今天内给您回复最新进展。"},
    {"slug": "delay-en", "lang": "en", "title": "Delivery delay apology",
     "body": "I am sorry your parcel is late. I have asked the carrier to check it and will update you today."},
    {"slug": "refund-zh", "lang": "zh-CN", "title": "退款说明",
     "body": "退款已提交，将原路退回您的支付账户。银行处理通常需要 3–5 个工作日，请留意到账通知。"},
    {"slug": "refund-en", "lang": "en", "title": "Refund on its way",
     "body": "Your refund has been issued to the original payment method. Banks usually need 3–5 business days."},
    {"slug": "hold-zh", "lang": "zh-CN", "title": "请稍等",
     "body": "好的，我帮您查一下，请稍等片刻。"},
    {"slug": "hold-en", "lang": "en", "title": "One moment",
     "body": "Thank you, let me check that for you. One moment, please."},
    {"slug": "closing-zh", "lang": "zh-CN", "title": "结束语",
     "body": "感谢您的耐心。如果还有其他问题，随时联系我们，祝您生活愉快！"},
    {"slug": "closing-en", "lang": "en", "title": "Closing",
     "body": "Thank you for your patience. If anything else comes up, just write to us. Have a great day!"},
]


def find_reply(slug: str) -> dict | None:
    """The built-in reply with this slug."""
    return next((reply for reply in REPLIES if reply["slug"] == slug), None)


def shown(text: str | None) -> str | None:
    """An imported reply's stored origin or licence, for people."""
    return shown_provenance(text, ORIGIN, LICENSE)
