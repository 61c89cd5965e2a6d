"""composer drafts: what a member typed in a conversation's composer and has not sent

Revision ID: b2d6e81f4c37
Revises: 9c41d27e5a10
Create Date: 2026-11-28 08:00:00.000000

"""
from alembic import op
import sqlalchemy as sa

import core.db


# revision identifiers, used by Alembic.
revision = 'b2d6e81f4c37'
down_revision = '9c41d27e5a10'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('composer_draft',
    sa.Column('member_id', sa.Uuid(), nullable=False),
    sa.Column('conversation_id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('private', sa.Boolean(), nullable=False),
    sa.Column('updated_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversation.id'],
                            name=op.f('fk_composer_draft_conversation_id_conversation')),
    sa.ForeignKeyConstraint(['member_id'], ['member.id'], name=op.f('fk_composer_draft_member_id_member')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_composer_draft_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('member_id', 'conversation_id', name=op.f('pk_composer_draft'))
    )
    op.create_index('ix_composer_draft_updated_at', 'composer_draft', ['updated_at'], unique=False)


def downgrade():
    op.drop_index('ix_composer_draft_updated_at', table_name='composer_draft')
    op.drop_table('composer_draft')
