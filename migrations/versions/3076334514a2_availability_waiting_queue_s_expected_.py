"""availability: events in threads, receipts' reason code, members' last routing and presence
change, conversations' assignment time, the queue's expected assignee

Revision ID: 3076334514a2
Revises: 587c545073ea
Create Date: 2026-11-28 03:34:34.518277

"""
from alembic import op
import sqlalchemy as sa

import core.db


# revision identifiers, used by Alembic.
revision = '3076334514a2'
down_revision = '587c545073ea'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('availability_event',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('conversation_id', sa.Uuid(), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('member_id', sa.Uuid(), nullable=True),
    sa.Column('reason_code', sa.String(length=30), nullable=True),
    sa.Column('message_id', sa.Uuid(), nullable=True),
    sa.Column('detail', sa.JSON(), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("kind IN ('waiting', 'drained', 'reassigned', 'released')",
                       name=op.f('ck_availability_event_kind_allowed')),
    sa.CheckConstraint("reason_code IN ('agent_on_leave', 'holiday', 'outside_shift', 'agent_offline', 'agent_away',"
                       " 'agent_at_capacity', 'no_reply')", name=op.f('ck_availability_event_reason_code_allowed')),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversation.id'],
                            name=op.f('fk_availability_event_conversation_id_conversation')),
    sa.ForeignKeyConstraint(['member_id'], ['member.id'], name=op.f('fk_availability_event_member_id_member')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_availability_event_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_availability_event'))
    )
    with op.batch_alter_table('availability_event', schema=None) as batch_op:
        batch_op.create_index('ix_availability_event_conversation_id_created_at', ['conversation_id', 'created_at'],
                              unique=False)

    # Plain ADD COLUMNs of nullable columns without checks: SQLite needs no rebuild.
    op.add_column('assignment_receipt', sa.Column('reason_code', sa.String(length=30), nullable=True))
    op.add_column('member', sa.Column('last_routed_at', core.db.UTCDateTime(timezone=True), nullable=True))
    op.add_column('member', sa.Column('presence_since', core.db.UTCDateTime(timezone=True), nullable=True))
    op.add_column('conversation', sa.Column('assigned_at', core.db.UTCDateTime(timezone=True), nullable=True))
    op.add_column('waiting_conversation', sa.Column('expected_assignee_id', sa.Uuid(), nullable=True))


def downgrade():
    # ALTER TABLE … DROP COLUMN on both (SQLite 3.35+).
    op.drop_column('waiting_conversation', 'expected_assignee_id')
    op.drop_column('conversation', 'assigned_at')
    op.drop_column('member', 'presence_since')
    op.drop_column('member', 'last_routed_at')
    op.drop_column('assignment_receipt', 'reason_code')

    with op.batch_alter_table('availability_event', schema=None) as batch_op:
        batch_op.drop_index('ix_availability_event_conversation_id_created_at')

    op.drop_table('availability_event')
