"""studio apps versions records

Revision ID: 210c6ff76f13
Revises: f12821695664
Create Date: 2026-11-22 22:11:46.992873

"""
from alembic import op
import sqlalchemy as sa

import core.db
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = '210c6ff76f13'
down_revision = 'f12821695664'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('studio_app',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=120), nullable=False),
    sa.Column('enabled', sa.Boolean(), nullable=False),
    sa.Column('active_version', sa.Integer(), nullable=True),
    sa.Column('latest_version', sa.Integer(), nullable=False),
    sa.Column('record_count', sa.Integer(), nullable=False),
    sa.Column('origin', sa.String(length=200), nullable=True),
    sa.Column('license', sa.String(length=200), nullable=True),
    sa.Column('created_by', sa.Uuid(), nullable=True),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['created_by'], ['user.id'], name=op.f('fk_studio_app_created_by_user')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_studio_app_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_studio_app'))
    )
    with op.batch_alter_table('studio_app', schema=None) as batch_op:
        batch_op.create_index('ix_studio_app_tenant_id_updated_at', ['tenant_id', 'updated_at'], unique=False)

    op.create_table('studio_tenant_usage',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('app_count', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_studio_tenant_usage_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('tenant_id', name=op.f('pk_studio_tenant_usage'))
    )
    op.create_table('studio_record',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('app_id', sa.Uuid(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('data', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('trace', sa.JSON(), nullable=False),
    sa.Column('idempotency_key', sa.Uuid(), nullable=False),
    sa.Column('input_digest', sa.String(length=64), nullable=False),
    sa.Column('created_by', sa.Uuid(), nullable=True),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['app_id'], ['studio_app.id'], name=op.f('fk_studio_record_app_id_studio_app')),
    sa.ForeignKeyConstraint(['created_by'], ['user.id'], name=op.f('fk_studio_record_created_by_user')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_studio_record_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_studio_record')),
    sa.UniqueConstraint('app_id', 'idempotency_key', name=op.f('uq_studio_record_app_id_idempotency_key'))
    )
    with op.batch_alter_table('studio_record', schema=None) as batch_op:
        batch_op.create_index('ix_studio_record_app_id_created_at', ['app_id', 'created_at'], unique=False)
        batch_op.create_index('ix_studio_record_app_id_version', ['app_id', 'version'], unique=False)
        batch_op.create_index(batch_op.f('ix_studio_record_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('studio_version',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('app_id', sa.Uuid(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('definition', sa.JSON(), nullable=False),
    sa.Column('definition_hash', sa.String(length=64), nullable=False),
    sa.Column('simulated', sa.Boolean(), nullable=False),
    sa.Column('created_by', sa.Uuid(), nullable=True),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['app_id'], ['studio_app.id'], name=op.f('fk_studio_version_app_id_studio_app')),
    sa.ForeignKeyConstraint(['created_by'], ['user.id'], name=op.f('fk_studio_version_created_by_user')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_studio_version_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_studio_version')),
    sa.UniqueConstraint('app_id', 'version', name=op.f('uq_studio_version_app_id_version'))
    )
    with op.batch_alter_table('studio_version', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_studio_version_tenant_id'), ['tenant_id'], unique=False)



def downgrade():
    with op.batch_alter_table('studio_version', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_studio_version_tenant_id'))

    op.drop_table('studio_version')
    with op.batch_alter_table('studio_record', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_studio_record_tenant_id'))
        batch_op.drop_index('ix_studio_record_app_id_version')
        batch_op.drop_index('ix_studio_record_app_id_created_at')

    op.drop_table('studio_record')
    op.drop_table('studio_tenant_usage')
    with op.batch_alter_table('studio_app', schema=None) as batch_op:
        batch_op.drop_index('ix_studio_app_tenant_id_updated_at')

    op.drop_table('studio_app')
