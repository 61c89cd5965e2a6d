"""Knowledge documents: stored directly, read back as committed, and changed through the console's forms."""
from core.db import db
from desk import knowledge
from desk.models import KnowledgeDocument, Tenant
from tests.conftest import csrf_from


def post_form(client, path: str, data: dict, **kwargs):
    """POST a knowledge page form with the page's CSRF token."""
    token = csrf_from(client.get("/knowledge").get_data(as_text=True))
    return client.post(path, data={"csrf_token": token, **data}, **kwargs)


def add_document(tenant: Tenant, status: str = "draft", body: str = "Body text.", processed: bool = False,
                 **fields) -> KnowledgeDocument:
    """Insert and commit a document; `processed` stores its text as safe processing would."""
    doc = KnowledgeDocument(tenant_id=tenant.id, title=fields.pop("title", "Returns"), body=body,
                            status=status, **fields)
    if processed:
        doc.safe_processed, doc.safe_body = True, knowledge.safe_text(body)[0]
    db.session.add(doc)
    db.session.commit()
    return doc


def reloaded(doc: KnowledgeDocument) -> KnowledgeDocument:
    """The document as the database holds it now."""
    db.session.expire_all()
    return db.session.get(KnowledgeDocument, doc.id)
