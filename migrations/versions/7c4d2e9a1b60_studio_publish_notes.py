"""studio publish notes: the note of a version's latest publication that had one

Revision ID: 7c4d2e9a1b60
Revises: 5e8a1c3f9b27
Create Date: 2026-11-28 12:40:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '7c4d2e9a1b60'
down_revision = '5e8a1c3f9b27'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('studio_version', schema=None) as batch_op:
        batch_op.add_column(sa.Column('publish_note', sa.String(length=400), nullable=True))


def downgrade():
    with op.batch_alter_table('studio_version', schema=None) as batch_op:
        batch_op.drop_column('publish_note')
