"""snooze and merge: when a snoozed conversation wakes, which conversation a merge moved it into,
the thread events of both, and events without an actor (a snooze ended by the tick or a customer)

Revision ID: 5e8a1c3f9b27
Revises: b2d6e81f4c37
Create Date: 2026-11-28 10:00:00.000000

"""
from alembic import op
import sqlalchemy as sa

import core.db


# revision identifiers, used by Alembic.
revision = '5e8a1c3f9b27'
down_revision = 'b2d6e81f4c37'
branch_labels = None
depends_on = None

KINDS = "('assignment', 'status', 'snooze', 'wake', 'merged_into', 'merged_from')"


def upgrade():
    with op.batch_alter_table('conversation', schema=None) as batch_op:
        batch_op.add_column(sa.Column('snoozed_until', core.db.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('merged_into_id', sa.Uuid(), nullable=True))
        batch_op.create_index('ix_conversation_snoozed_until', ['snoozed_until'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_conversation_merged_into_id_conversation'), 'conversation',
                                    ['merged_into_id'], ['id'])
    with op.batch_alter_table('conversation_event', schema=None) as batch_op:
        batch_op.drop_constraint(op.f('ck_conversation_event_kind_allowed'), type_='check')
        batch_op.create_check_constraint('kind_allowed', f"kind IN {KINDS}")
        batch_op.alter_column('actor_member_id', existing_type=sa.Uuid(), nullable=True)


def downgrade():
    op.execute("DELETE FROM conversation_event WHERE kind NOT IN ('assignment', 'status')")
    with op.batch_alter_table('conversation_event', schema=None) as batch_op:
        batch_op.alter_column('actor_member_id', existing_type=sa.Uuid(), nullable=False)
        batch_op.drop_constraint(op.f('ck_conversation_event_kind_allowed'), type_='check')
        batch_op.create_check_constraint('kind_allowed', "kind IN ('assignment', 'status')")
    with op.batch_alter_table('conversation', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_conversation_merged_into_id_conversation'), type_='foreignkey')
        batch_op.drop_index('ix_conversation_snoozed_until')
        batch_op.drop_column('merged_into_id')
        batch_op.drop_column('snoozed_until')
