"""service levels: a tenant's policies and weekly business hours

Revision ID: 56b111764f7a
Revises: 3076334514a2
Create Date: 2026-11-28 05:13:01.246330

"""
from alembic import op
import sqlalchemy as sa

import core.db


# revision identifiers, used by Alembic.
revision = '56b111764f7a'
down_revision = '3076334514a2'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('service_level_settings',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('policies', sa.JSON(), nullable=False),
    sa.Column('hours', sa.JSON(), nullable=False),
    sa.Column('updated_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_service_level_settings_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('tenant_id', name=op.f('pk_service_level_settings'))
    )


def downgrade():
    op.drop_table('service_level_settings')
