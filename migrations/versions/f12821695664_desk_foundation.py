"""desk foundation

Revision ID: f12821695664
Revises: 
Create Date: 2026-11-22 21:43:38.332309

"""
from alembic import op
import sqlalchemy as sa

import core.db


# revision identifiers, used by Alembic.
revision = 'f12821695664'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('tenant',
    sa.Column('name', sa.String(length=120), nullable=False),
    sa.Column('tier', sa.String(length=20), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("tier IN ('standard', 'professional')", name=op.f('ck_tenant_tier_allowed')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tenant'))
    )
    op.create_table('user',
    sa.Column('email', sa.String(length=254), nullable=False),
    sa.Column('password_hash', sa.String(length=255), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_user')),
    sa.UniqueConstraint('email', name=op.f('uq_user_email'))
    )
    op.create_table('audit_entry',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('actor_id', sa.Uuid(), nullable=True),
    sa.Column('action', sa.String(length=80), nullable=False),
    sa.Column('target', sa.String(length=200), nullable=False),
    sa.Column('summary', sa.JSON(), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['actor_id'], ['user.id'], name=op.f('fk_audit_entry_actor_id_user')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_audit_entry_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_entry'))
    )
    with op.batch_alter_table('audit_entry', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_audit_entry_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_audit_entry_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('channel',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=80), nullable=False),
    sa.Column('secret_encrypted', sa.Text(), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_channel_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_channel'))
    )
    with op.batch_alter_table('channel', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_channel_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('customer',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=120), nullable=False),
    sa.Column('phone', sa.String(length=40), nullable=True),
    sa.Column('email', sa.String(length=254), nullable=True),
    sa.Column('support_note', sa.Text(), nullable=False),
    sa.Column('external_id', sa.String(length=128), nullable=True),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_customer_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_customer')),
    sa.UniqueConstraint('tenant_id', 'external_id', name=op.f('uq_customer_tenant_id_external_id'))
    )
    with op.batch_alter_table('customer', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_customer_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('knowledge_document',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('title', sa.String(length=200), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('valid_until', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('safe_processed', sa.Boolean(), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("status IN ('draft', 'published', 'expired')", name=op.f('ck_knowledge_document_status_allowed')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_knowledge_document_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_knowledge_document'))
    )
    with op.batch_alter_table('knowledge_document', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_knowledge_document_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('member',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('user_id', sa.Uuid(), nullable=False),
    sa.Column('role', sa.String(length=20), nullable=False),
    sa.Column('display_name', sa.String(length=80), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('synchronized', sa.Boolean(), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("role IN ('admin', 'supervisor', 'agent')", name=op.f('ck_member_role_allowed')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_member_tenant_id_tenant')),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], name=op.f('fk_member_user_id_user')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_member')),
    sa.UniqueConstraint('tenant_id', 'user_id', name=op.f('uq_member_tenant_id_user_id'))
    )
    with op.batch_alter_table('member', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_member_tenant_id'), ['tenant_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_member_user_id'), ['user_id'], unique=False)

    op.create_table('official_account',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=120), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("kind IN ('independent', 'shared')", name=op.f('ck_official_account_kind_allowed')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_official_account_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_official_account'))
    )
    with op.batch_alter_table('official_account', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_official_account_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('conversation',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('customer_id', sa.Uuid(), nullable=False),
    sa.Column('channel_id', sa.Uuid(), nullable=True),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('assignee_member_id', sa.Uuid(), nullable=True),
    sa.Column('bot_active', sa.Boolean(), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_activity_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("status IN ('open', 'pending', 'resolved')", name=op.f('ck_conversation_status_allowed')),
    sa.ForeignKeyConstraint(['assignee_member_id'], ['member.id'], name=op.f('fk_conversation_assignee_member_id_member')),
    sa.ForeignKeyConstraint(['channel_id'], ['channel.id'], name=op.f('fk_conversation_channel_id_channel')),
    sa.ForeignKeyConstraint(['customer_id'], ['customer.id'], name=op.f('fk_conversation_customer_id_customer')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_conversation_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_conversation'))
    )
    with op.batch_alter_table('conversation', schema=None) as batch_op:
        batch_op.create_index('ix_conversation_customer_id_channel_id', ['customer_id', 'channel_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_conversation_tenant_id'), ['tenant_id'], unique=False)
        batch_op.create_index('ix_conversation_tenant_id_last_activity_at', ['tenant_id', 'last_activity_at'], unique=False)

    op.create_table('marketing_draft',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('official_account_id', sa.Uuid(), nullable=False),
    sa.Column('title', sa.String(length=200), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('source', sa.String(length=40), nullable=False),
    sa.Column('source_ref', sa.String(length=200), nullable=True),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('created_by', sa.Uuid(), nullable=True),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['created_by'], ['user.id'], name=op.f('fk_marketing_draft_created_by_user')),
    sa.ForeignKeyConstraint(['official_account_id'], ['official_account.id'], name=op.f('fk_marketing_draft_official_account_id_official_account')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_marketing_draft_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_marketing_draft'))
    )
    with op.batch_alter_table('marketing_draft', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_marketing_draft_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('message',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('conversation_id', sa.Uuid(), nullable=False),
    sa.Column('channel_id', sa.Uuid(), nullable=True),
    sa.Column('external_id', sa.String(length=128), nullable=True),
    sa.Column('direction', sa.String(length=10), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('author_member_id', sa.Uuid(), nullable=True),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('attachments', sa.JSON(), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("direction IN ('inbound', 'outbound')", name=op.f('ck_message_direction_allowed')),
    sa.CheckConstraint("kind IN ('public', 'private_note')", name=op.f('ck_message_kind_allowed')),
    sa.ForeignKeyConstraint(['author_member_id'], ['member.id'], name=op.f('fk_message_author_member_id_member')),
    sa.ForeignKeyConstraint(['channel_id'], ['channel.id'], name=op.f('fk_message_channel_id_channel')),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversation.id'], name=op.f('fk_message_conversation_id_conversation')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_message_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_message')),
    sa.UniqueConstraint('channel_id', 'external_id', name=op.f('uq_message_channel_id_external_id'))
    )
    with op.batch_alter_table('message', schema=None) as batch_op:
        batch_op.create_index('ix_message_conversation_id_created_at', ['conversation_id', 'created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_message_tenant_id'), ['tenant_id'], unique=False)



def downgrade():
    with op.batch_alter_table('message', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_message_tenant_id'))
        batch_op.drop_index('ix_message_conversation_id_created_at')

    op.drop_table('message')
    with op.batch_alter_table('marketing_draft', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_marketing_draft_tenant_id'))

    op.drop_table('marketing_draft')
    with op.batch_alter_table('conversation', schema=None) as batch_op:
        batch_op.drop_index('ix_conversation_tenant_id_last_activity_at')
        batch_op.drop_index(batch_op.f('ix_conversation_tenant_id'))
        batch_op.drop_index('ix_conversation_customer_id_channel_id')

    op.drop_table('conversation')
    with op.batch_alter_table('official_account', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_official_account_tenant_id'))

    op.drop_table('official_account')
    with op.batch_alter_table('member', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_member_user_id'))
        batch_op.drop_index(batch_op.f('ix_member_tenant_id'))

    op.drop_table('member')
    with op.batch_alter_table('knowledge_document', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_knowledge_document_tenant_id'))

    op.drop_table('knowledge_document')
    with op.batch_alter_table('customer', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_customer_tenant_id'))

    op.drop_table('customer')
    with op.batch_alter_table('channel', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_channel_tenant_id'))

    op.drop_table('channel')
    with op.batch_alter_table('audit_entry', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_audit_entry_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_audit_entry_created_at'))

    op.drop_table('audit_entry')
    op.drop_table('user')
    op.drop_table('tenant')
