"""generation drafts of registered kinds: draft_kind, and rule_draft renamed preview_draft

Revision ID: b7e4c2a91d30
Revises: 623816f64ffc
Create Date: 2026-11-25 15:10:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = 'b7e4c2a91d30'
down_revision = '623816f64ffc'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('studio_generation', schema=None) as batch_op:
        batch_op.add_column(sa.Column('draft_kind', sa.String(length=40), nullable=True))
        batch_op.alter_column('rule_draft', new_column_name='preview_draft')
    op.execute("UPDATE studio_generation SET draft_kind = 'automation_preview' WHERE preview_draft IS NOT NULL")


def downgrade():
    with op.batch_alter_table('studio_generation', schema=None) as batch_op:
        batch_op.alter_column('preview_draft', new_column_name='rule_draft')
        batch_op.drop_column('draft_kind')
