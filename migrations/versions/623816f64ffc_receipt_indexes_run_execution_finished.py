"""assignment receipt indexes for the conflict lookup and the sweep; when a run's execution finished

Revision ID: 623816f64ffc
Revises: 053dcb63a195
Create Date: 2026-11-23 20:55:12.938268

"""
from alembic import op
import sqlalchemy as sa

import core.db


# revision identifiers, used by Alembic.
revision = '623816f64ffc'
down_revision = '053dcb63a195'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('assignment_receipt', schema=None) as batch_op:
        batch_op.create_index('ix_assignment_receipt_conversation_id_status', ['conversation_id', 'status'], unique=False)
        batch_op.create_index('ix_assignment_receipt_status_updated_at', ['status', 'updated_at'], unique=False)

    with op.batch_alter_table('automation_run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('execution_finished_at', core.db.UTCDateTime(timezone=True), nullable=True))


def downgrade():
    with op.batch_alter_table('automation_run', schema=None) as batch_op:
        batch_op.drop_column('execution_finished_at')

    with op.batch_alter_table('assignment_receipt', schema=None) as batch_op:
        batch_op.drop_index('ix_assignment_receipt_status_updated_at')
        batch_op.drop_index('ix_assignment_receipt_conversation_id_status')

