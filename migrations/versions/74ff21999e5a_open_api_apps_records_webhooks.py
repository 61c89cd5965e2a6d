"""open api apps records webhooks

Revision ID: 74ff21999e5a
Revises: 210c6ff76f13
Create Date: 2026-11-23 09:13:59.948765

"""
from alembic import op
import sqlalchemy as sa

import core.db
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = '74ff21999e5a'
down_revision = '210c6ff76f13'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('open_app',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=80), nullable=False),
    sa.Column('scopes', sa.JSON(), nullable=False),
    sa.Column('webhook_url', sa.String(length=2048), nullable=True),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('signing_secret_encrypted', sa.Text(), nullable=True),
    sa.Column('record_count', sa.Integer(), nullable=False),
    sa.Column('created_by', sa.Uuid(), nullable=True),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['created_by'], ['user.id'], name=op.f('fk_open_app_created_by_user')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_open_app_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_open_app')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_open_app_token_hash'))
    )
    with op.batch_alter_table('open_app', schema=None) as batch_op:
        batch_op.create_index('ix_open_app_tenant_id_created_at', ['tenant_id', 'created_at'], unique=False)

    op.create_table('open_tenant_usage',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('app_count', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_open_tenant_usage_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('tenant_id', name=op.f('pk_open_tenant_usage'))
    )
    op.create_table('open_record',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('app_id', sa.Uuid(), nullable=False),
    sa.Column('data', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('idempotency_key', sa.Uuid(), nullable=False),
    sa.Column('request_digest', sa.String(length=64), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['app_id'], ['open_app.id'], name=op.f('fk_open_record_app_id_open_app')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_open_record_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_open_record')),
    sa.UniqueConstraint('app_id', 'idempotency_key', name=op.f('uq_open_record_app_id_idempotency_key'))
    )
    with op.batch_alter_table('open_record', schema=None) as batch_op:
        batch_op.create_index('ix_open_record_app_id_id', ['app_id', 'id'], unique=False)
        batch_op.create_index(batch_op.f('ix_open_record_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('open_webhook_event',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('app_id', sa.Uuid(), nullable=False),
    sa.Column('record_id', sa.Uuid(), nullable=False),
    sa.Column('type', sa.String(length=40), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('finished_at', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['app_id'], ['open_app.id'], name=op.f('fk_open_webhook_event_app_id_open_app')),
    sa.ForeignKeyConstraint(['record_id'], ['open_record.id'], name=op.f('fk_open_webhook_event_record_id_open_record')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_open_webhook_event_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_open_webhook_event')),
    sa.UniqueConstraint('record_id', name=op.f('uq_open_webhook_event_record_id'))
    )
    with op.batch_alter_table('open_webhook_event', schema=None) as batch_op:
        batch_op.create_index('ix_open_webhook_event_app_id_created_at', ['app_id', 'created_at'], unique=False)
        batch_op.create_index('ix_open_webhook_event_status_next_attempt_at', ['status', 'next_attempt_at'], unique=False)

    op.create_table('open_webhook_attempt',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('event_id', sa.Uuid(), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('started_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('status_code', sa.Integer(), nullable=True),
    sa.Column('error', sa.String(length=40), nullable=True),
    sa.Column('duration_ms', sa.Integer(), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['event_id'], ['open_webhook_event.id'], name=op.f('fk_open_webhook_attempt_event_id_open_webhook_event')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_open_webhook_attempt_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_open_webhook_attempt')),
    sa.UniqueConstraint('event_id', 'number', name=op.f('uq_open_webhook_attempt_event_id_number'))
    )
    with op.batch_alter_table('customer', schema=None) as batch_op:
        batch_op.create_index('ix_customer_tenant_id_id', ['tenant_id', 'id'], unique=False)



def downgrade():
    with op.batch_alter_table('customer', schema=None) as batch_op:
        batch_op.drop_index('ix_customer_tenant_id_id')

    op.drop_table('open_webhook_attempt')
    with op.batch_alter_table('open_webhook_event', schema=None) as batch_op:
        batch_op.drop_index('ix_open_webhook_event_status_next_attempt_at')
        batch_op.drop_index('ix_open_webhook_event_app_id_created_at')

    op.drop_table('open_webhook_event')
    with op.batch_alter_table('open_record', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_open_record_tenant_id'))
        batch_op.drop_index('ix_open_record_app_id_id')

    op.drop_table('open_record')
    op.drop_table('open_tenant_usage')
    with op.batch_alter_table('open_app', schema=None) as batch_op:
        batch_op.drop_index('ix_open_app_tenant_id_created_at')

    op.drop_table('open_app')
