"""service levels: the timers running on conversations

Revision ID: 9c41d27e5a10
Revises: 56b111764f7a
Create Date: 2026-11-28 06:50:00.000000

"""
from alembic import op
import sqlalchemy as sa

import core.db


# revision identifiers, used by Alembic.
revision = '9c41d27e5a10'
down_revision = '56b111764f7a'
branch_labels = None
depends_on = None

OPEN_DUE = "breached_at IS NULL AND stopped_at IS NULL AND due_at IS NOT NULL"
RUNNING = "stopped_at IS NULL"
BREACHED = "breached_at IS NOT NULL"


def upgrade():
    op.create_table('service_level_timer',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('conversation_id', sa.Uuid(), nullable=False),
    sa.Column('channel_id', sa.Uuid(), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('hours', sa.String(length=10), nullable=False),
    sa.Column('target_minutes', sa.Integer(), nullable=False),
    sa.Column('started_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('started_on', sa.Date(), nullable=False),
    sa.Column('counted_since', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('used_minutes', sa.Double(), nullable=False),
    sa.Column('due_at', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('breached_at', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('stopped_at', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('elapsed_minutes', sa.Double(), nullable=True),
    sa.Column('member_id', sa.Uuid(), nullable=True),
    sa.Column('outcome', sa.String(length=10), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("hours IN ('business', 'calendar')", name=op.f('ck_service_level_timer_hours_allowed')),
    sa.CheckConstraint("kind IN ('first_response', 'next_response', 'resolution')",
                       name=op.f('ck_service_level_timer_kind_allowed')),
    sa.CheckConstraint("outcome IN ('met', 'breached', 'closed')", name=op.f('ck_service_level_timer_outcome_allowed')),
    sa.ForeignKeyConstraint(['channel_id'], ['channel.id'], name=op.f('fk_service_level_timer_channel_id_channel')),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversation.id'],
                            name=op.f('fk_service_level_timer_conversation_id_conversation')),
    sa.ForeignKeyConstraint(['member_id'], ['member.id'], name=op.f('fk_service_level_timer_member_id_member')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_service_level_timer_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_service_level_timer'))
    )
    op.create_index('ix_service_level_timer_conversation_id_kind', 'service_level_timer',
                    ['conversation_id', 'kind'], unique=False)
    op.create_index('ix_service_level_timer_due', 'service_level_timer', ['due_at'], unique=False,
                    postgresql_where=sa.text(OPEN_DUE), sqlite_where=sa.text(OPEN_DUE))
    op.create_index('ix_service_level_timer_tenant_id_due_at', 'service_level_timer', ['tenant_id', 'due_at'],
                    unique=False, postgresql_where=sa.text(RUNNING), sqlite_where=sa.text(RUNNING))
    op.create_index('ix_service_level_timer_tenant_id_started_on', 'service_level_timer',
                    ['tenant_id', 'started_on'], unique=False)
    op.create_index('ix_service_level_timer_tenant_id_breached_at', 'service_level_timer', ['tenant_id', 'breached_at'],
                    unique=False, postgresql_where=sa.text(BREACHED), sqlite_where=sa.text(BREACHED))


def downgrade():
    op.drop_index('ix_service_level_timer_tenant_id_breached_at', table_name='service_level_timer')
    op.drop_index('ix_service_level_timer_tenant_id_started_on', table_name='service_level_timer')
    op.drop_index('ix_service_level_timer_tenant_id_due_at', table_name='service_level_timer')
    op.drop_index('ix_service_level_timer_due', table_name='service_level_timer')
    op.drop_index('ix_service_level_timer_conversation_id_kind', table_name='service_level_timer')
    op.drop_table('service_level_timer')
