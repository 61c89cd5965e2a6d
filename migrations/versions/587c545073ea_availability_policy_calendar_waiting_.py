"""availability: policy, calendar exceptions, waiting queue; member presence, capacity, shifts, leave

Revision ID: 587c545073ea
Revises: 387b0c643ce7
Create Date: 2026-11-28 01:29:27.359209

"""
from alembic import op
import sqlalchemy as sa

import core.db


# revision identifiers, used by Alembic.
revision = '587c545073ea'
down_revision = '387b0c643ce7'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('availability_policy',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('enabled', sa.Boolean(), server_default=sa.false(), nullable=False),
    sa.Column('default_capacity', sa.Integer(), nullable=False),
    sa.Column('fallback_after_minutes', sa.Integer(), nullable=True),
    sa.Column('no_reply_minutes', sa.Integer(), nullable=True),
    sa.Column('offline_policy', sa.String(length=30), nullable=False),
    sa.Column('release_after_minutes', sa.Integer(), nullable=True),
    sa.CheckConstraint("(offline_policy = 'release_after' AND release_after_minutes IS NOT NULL)"
                       " OR (offline_policy <> 'release_after' AND release_after_minutes IS NULL)",
                       name=op.f('ck_availability_policy_release_after_minutes_set')),
    sa.CheckConstraint("offline_policy IN ('keep', 'release_after', 'release_on_customer_reply')",
                       name=op.f('ck_availability_policy_offline_policy_allowed')),
    sa.CheckConstraint('default_capacity BETWEEN 1 AND 100',
                       name=op.f('ck_availability_policy_default_capacity_range')),
    sa.CheckConstraint('fallback_after_minutes BETWEEN 0 AND 1440',
                       name=op.f('ck_availability_policy_fallback_after_minutes_range')),
    sa.CheckConstraint('no_reply_minutes BETWEEN 1 AND 1440',
                       name=op.f('ck_availability_policy_no_reply_minutes_range')),
    sa.CheckConstraint('release_after_minutes BETWEEN 1 AND 1440',
                       name=op.f('ck_availability_policy_release_after_minutes_range')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_availability_policy_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('tenant_id', name=op.f('pk_availability_policy'))
    )
    op.create_table('calendar_exception',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('kind', sa.String(length=10), nullable=False),
    sa.Column('name', sa.String(length=60), nullable=False),
    sa.Column('as_weekday', sa.Integer(), nullable=True),
    sa.CheckConstraint("(kind = 'workday' AND as_weekday IS NOT NULL) OR (kind = 'holiday' AND as_weekday IS NULL)",
                       name=op.f('ck_calendar_exception_as_weekday_set')),
    sa.CheckConstraint("kind IN ('holiday', 'workday')", name=op.f('ck_calendar_exception_kind_allowed')),
    sa.CheckConstraint('as_weekday BETWEEN 1 AND 7', name=op.f('ck_calendar_exception_as_weekday_range')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_calendar_exception_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('tenant_id', 'day', name=op.f('pk_calendar_exception'))
    )
    op.create_table('waiting_conversation',
    sa.Column('conversation_id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('preferred_member_id', sa.Uuid(), nullable=True),
    sa.Column('reason_code', sa.String(length=30), nullable=False),
    sa.Column('waiting_since', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.CheckConstraint("reason_code IN ('agent_on_leave', 'holiday', 'outside_shift', 'agent_offline', 'agent_away',"
                       " 'agent_at_capacity', 'no_reply')", name=op.f('ck_waiting_conversation_reason_code_allowed')),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversation.id'],
                            name=op.f('fk_waiting_conversation_conversation_id_conversation')),
    sa.ForeignKeyConstraint(['preferred_member_id'], ['member.id'],
                            name=op.f('fk_waiting_conversation_preferred_member_id_member')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_waiting_conversation_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('conversation_id', name=op.f('pk_waiting_conversation'))
    )
    with op.batch_alter_table('waiting_conversation', schema=None) as batch_op:
        batch_op.create_index('ix_waiting_conversation_tenant_id_waiting_since',
                              ['tenant_id', 'waiting_since', 'conversation_id'], unique=False)

    # Plain ADD COLUMNs, their checks inline: SQLite would otherwise rebuild `member`, which every
    # table refers to (literal defaults and inline checks need no rebuild there).
    with op.batch_alter_table('member', schema=None) as batch_op:
        batch_op.add_column(sa.Column('presence', sa.String(length=10), sa.CheckConstraint(
            "presence IN ('online', 'away', 'offline')", name=op.f('ck_member_presence_allowed')),
            server_default='online', nullable=False))
        batch_op.add_column(sa.Column('last_seen_at', core.db.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('capacity', sa.Integer(), sa.CheckConstraint(
            'capacity BETWEEN 1 AND 100', name=op.f('ck_member_capacity_range')), nullable=True))
        batch_op.add_column(sa.Column('shifts', sa.JSON(), server_default='[]', nullable=False))
        batch_op.add_column(sa.Column('leave', sa.JSON(), server_default='[]', nullable=False))


def downgrade():
    # ALTER TABLE … DROP COLUMN on both (SQLite 3.35+): a batch would rebuild `member` (above).
    for column in ('leave', 'shifts', 'capacity', 'last_seen_at', 'presence'):
        op.drop_column('member', column)

    with op.batch_alter_table('waiting_conversation', schema=None) as batch_op:
        batch_op.drop_index('ix_waiting_conversation_tenant_id_waiting_since')

    op.drop_table('waiting_conversation')
    op.drop_table('calendar_exception')
    op.drop_table('availability_policy')
