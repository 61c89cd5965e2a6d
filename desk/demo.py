"""The demo seed: two tenants with people, customers, conversations and knowledge."""
import random
import uuid
from datetime import timedelta

from sqlalchemy import select

from core.api import ApiError
from core.clock import utcnow
from core.db import db
from desk.channels import create_channel
from desk.knowledge import safe_text
from desk.models import Conversation, Customer, KnowledgeDocument, Message, OfficialAccount, Tenant
from desk.tenancy import add_member, create_tenant

DEMO_PASSWORD = "demo-pass-2026"
TENANTS = (
    {"name": "Acme Support (Pro)", "slug": "acme", "tier": "professional", "account": "independent"},
    {"name": "Lotus Retail", "slug": "lotus", "tier": "standard", "account": "shared"},
)
PEOPLE = (("admin", "admin", "Alex Admin"), ("supervisor", "supervisor", "Sun Supervisor"),
          ("agent", "agent1", "Li Wei"), ("agent", "agent2", "Maria Garcia"), ("agent", "agent3", "Zhang Min"))
CUSTOMER_NAMES = (
    "王芳", "李娜", "张伟", "刘洋", "陈静", "杨磊", "赵敏", "黄强", "周婷", "吴军", "徐丽", "孙浩",
    "马超", "朱琳", "胡斌", "Emily Carter", "James Wilson", "Olivia Brown", "Noah Davis",
    "Sophia Martinez", "Liam Johnson", "Ava Thompson", "Ethan White", "Mia Harris", "Lucas Clark",
    "Chloe Lewis", "Daniel Young", "Grace Walker", "Henry Hall", "Isabella King")
SCRIPTS = (
    [("in", "你好，我上周买的耳机左边没有声音，可以换货吗？"), ("out", "您好！很抱歉给您带来不便。请提供一下订单号，我帮您查询。"),
     ("in", "订单号是 20261103-5521。"), ("note", "已核实在保修期内，走换货流程。"),
     ("out", "已为您提交换货申请，快递员会在两天内上门取件。")],
    [("in", "请问你们的发票怎么开？公司抬头需要加税号。"), ("out", "您可以在订单详情页点击“申请发票”，填写抬头和税号即可，三个工作日内发送到邮箱。"),
     ("in", "好的，谢谢！")],
    [("in", "快递显示已签收，但我没有收到包裹。"), ("out", "非常抱歉！我们马上联系快递公司核实，请留意电话。"),
     ("note", "已联系快递站点，包裹被放在小区驿站。"), ("out", "包裹在您小区的驿站，取件码已发送到您的手机。")],
    [("in", "会员积分什么时候过期？"), ("out", "积分自获得之日起 12 个月内有效，可在“我的-积分”查看明细。")],
    [("in", "我想取消订单，还没有发货。"), ("out", "好的，已为您取消，退款将在 1-3 个工作日原路退回。"), ("in", "收到，麻烦了。")],
    [("in", "你们周末有客服吗？"), ("out", "有的，周末 9:00-18:00 在线客服都可以为您服务。")],
    [("in", "产品说明书丢了，有电子版吗？"), ("out", "有的，我把下载链接发给您：在官网“服务支持-说明书下载”即可找到。"),
     ("in", "找到了，谢谢！")],
    [("in", "退款到账了吗？已经五天了。"), ("note", "财务确认退款已于昨日处理，银行入账可能有延迟。"),
     ("out", "退款已于昨天处理成功，银行入账一般需要 1-3 个工作日，请再耐心等待一下。")],
    [("in", "Hi, my order arrived damaged. The box was crushed and the mug is broken."),
     ("out", "I'm so sorry to hear that! Could you send a photo of the damage and your order number?"),
     ("in", "Order #A-88213, photo attached."), ("note", "Photo confirms transit damage; approve replacement."),
     ("out", "Thank you. A replacement is on its way and you don't need to return the broken item.")],
    [("in", "How do I reset my account password? The reset email never arrives."),
     ("out", "Please check your spam folder first. If it's not there, I can trigger a new reset link for you."),
     ("in", "Found it in spam, thanks!")],
    [("in", "Can I change the delivery address for order #B-10233?"),
     ("out", "Yes, it hasn't shipped yet. What's the new address?"), ("in", "12 Harbour Road, Apt 5."),
     ("out", "Done — the new address is saved on your order.")],
    [("in", "Do you ship to Singapore?"), ("out", "We do! International shipping to Singapore takes 5-8 business days.")],
    [("in", "I was charged twice for the same subscription this month."),
     ("note", "Duplicate charge visible in billing; escalate to finance."),
     ("out", "You're right, there is a duplicate charge. We've refunded it; you'll see it in 3-5 business days.")],
    [("in", "Is the blue jacket coming back in size M?"),
     ("out", "It's expected back in stock next week. Would you like a notification when it's available?"),
     ("in", "Yes please.")],
    [("in", "The app keeps logging me out on Android."),
     ("out", "Thanks for reporting this. Could you tell me your app version (Settings > About)?"),
     ("in", "Version 4.2.1"), ("out", "Version 4.2.2 fixes this issue; please update from the store.")],
    [("in", "What's your return policy for sale items?"),
     ("out", "Sale items can be returned within 14 days in original condition for store credit.")],
)
KNOWLEDGE = (
    ("退换货政策", "published", "自签收之日起 7 天内可无理由退货，15 天内质量问题可换货。请保留完整包装和配件。"),
    ("Shipping times and carriers", "published", "Domestic orders ship within 24 hours and arrive in 2-4 business days. International shipping takes 5-10 business days depending on the destination."),
    ("发票开具说明", "published", "在订单详情页申请发票，填写抬头与税号，电子发票三个工作日内发送至邮箱。"),
    ("Holiday opening hours 2026", "draft", "Draft: opening hours for the Spring Festival period, pending approval."),
    ("2025 双十一活动规则", "expired", "活动时间 11 月 1 日至 11 日，满 300 减 40。活动已结束。"),
)


def _member_email(slug: str, handle: str) -> str:
    """Demo e-mail address of a person."""
    return f"{handle}@{slug}.example"


def _seed_people(tenant: Tenant, slug: str) -> tuple[list[dict], list]:
    """The admin, supervisor and three agents of a tenant."""
    people, agents = [], []
    for role, handle, name in PEOPLE:
        member = add_member(tenant.id, _member_email(slug, handle), DEMO_PASSWORD, role, name)
        people.append({"role": role, "email": _member_email(slug, handle), "member_id": str(member.id)})
        if role != "admin":
            agents.append(member)
    return people, agents


def _seed_conversations(tenant: Tenant, channel_id, agents: list, rng: random.Random) -> None:
    """30 customers and 40 conversations spread over the last 60 days."""
    now = utcnow()
    customers = []
    for i, name in enumerate(CUSTOMER_NAMES):
        customer = Customer(tenant_id=tenant.id, name=name, external_id=f"demo-{i:03d}",
                            phone=f"+86 138{rng.randrange(10**7, 10**8)}" if i % 3 else None,
                            email=f"customer{i}@mail.example" if i % 2 else None,
                            support_note="VIP customer, prefers phone." if i % 7 == 0 else "")
        db.session.add(customer)
        customers.append(customer)
    db.session.flush()
    for n in range(40):
        started = now - timedelta(days=rng.uniform(0, 60))
        customer_index = n % len(customers)
        # A customer has one conversation per channel: second conversations were opened by agents.
        via = channel_id if n < len(customers) else None
        # Chinese-named customers write Chinese, the others English.
        script = SCRIPTS[(n % 8) + (0 if customer_index < 15 else 8)]
        status = rng.choice(("open", "open", "pending", "resolved"))
        assignee = rng.choice(agents).id if n % 4 else None
        moments, moment = [], started
        for _ in script:
            moment = min(moment + timedelta(minutes=rng.randint(1, 90)), now)
            moments.append(moment)
        # Written once, its last message being its last change: no later UPDATE moves it to today.
        conversation = Conversation(
            id=uuid.uuid4(), tenant_id=tenant.id, customer_id=customers[customer_index].id, channel_id=via,
            status=status, assignee_member_id=assignee, created_at=started,
            updated_at=moments[-1], last_activity_at=moments[-1])
        db.session.add(conversation)
        for j, ((kind, text), moment) in enumerate(zip(script, moments)):
            db.session.add(Message(
                tenant_id=tenant.id, conversation_id=conversation.id, text=text, created_at=moment,
                direction="inbound" if kind == "in" else "outbound",
                kind="private_note" if kind == "note" else "public",
                channel_id=via if kind == "in" else None,
                external_id=f"demo-{conversation.id}-{j}" if kind == "in" and via else None))


def _seed_knowledge(tenant: Tenant) -> None:
    """Knowledge documents in published, draft and expired states; those that were published are
    processed as the safe-processing job would have done it."""
    now = utcnow()
    for title, status, body in KNOWLEDGE:
        safe_body, unsafe_reason = safe_text(body) if status != "draft" else (None, None)
        db.session.add(KnowledgeDocument(
            tenant_id=tenant.id, title=title, body=body, status=status,
            safe_processed=safe_body is not None, safe_body=safe_body, unsafe_reason=unsafe_reason,
            published_at=now - timedelta(days=30) if status != "draft" else None,
            valid_until=now - timedelta(days=10) if status == "expired" else now + timedelta(days=365)))


def seed_demo() -> dict:
    """Seed both demo tenants once; returns their logins, members and channel secrets."""
    if db.session.scalar(select(Tenant).where(Tenant.name == TENANTS[0]["name"])):
        raise ApiError("demo_exists", 409)
    rng = random.Random(2026)
    summary = {"password": DEMO_PASSWORD, "tenants": []}
    tenants = []
    for spec in TENANTS:
        tenant = create_tenant(spec["name"], spec["tier"])
        tenants.append(tenant)
        people, agents = _seed_people(tenant, spec["slug"])
        channel, secret = create_channel(tenant.id, "Website chat")
        db.session.add(OfficialAccount(tenant_id=tenant.id, name=f"{spec['name']} Official",
                                       kind=spec["account"]))
        _seed_conversations(tenant, channel.id, agents, rng)
        _seed_knowledge(tenant)
        summary["tenants"].append({"tenant_id": str(tenant.id), "name": tenant.name, "tier": tenant.tier,
                                   "members": people, "channel_id": str(channel.id),
                                   "channel_secret": secret})
    # One operator works in both tenants, to show tenant selection.
    for tenant, entry in zip(tenants, summary["tenants"]):
        ops = add_member(tenant.id, "ops@demo.example", DEMO_PASSWORD, "admin", "Ops Admin")
        entry["members"].append({"role": "admin", "email": "ops@demo.example", "member_id": str(ops.id)})
    db.session.flush()
    return summary
