"""automation rules, revisions and grants; the rule drafts of generation

Revision ID: aad320c506d7
Revises: 696675891bb0
Create Date: 2026-11-23 18:58:54.625127

"""
from alembic import op
import sqlalchemy as sa

import core.db


# revision identifiers, used by Alembic.
revision = 'aad320c506d7'
down_revision = '696675891bb0'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('automation_rule',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=120), nullable=False),
    sa.Column('trigger', sa.String(length=20), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('latest_revision', sa.Integer(), nullable=False),
    sa.Column('active_revision', sa.Integer(), nullable=True),
    sa.Column('grant_id', sa.Uuid(), nullable=True),
    sa.Column('created_by', sa.Uuid(), nullable=True),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("state IN ('draft', 'published', 'paused')", name=op.f('ck_automation_rule_state_allowed')),
    sa.CheckConstraint("trigger IN ('weekly', 'manual_sample', 'message_received')", name=op.f('ck_automation_rule_trigger_allowed')),
    sa.ForeignKeyConstraint(['created_by'], ['user.id'], name=op.f('fk_automation_rule_created_by_user')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_automation_rule_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_automation_rule'))
    )
    with op.batch_alter_table('automation_rule', schema=None) as batch_op:
        batch_op.create_index('ix_automation_rule_tenant_id_updated_at', ['tenant_id', 'updated_at'], unique=False)

    op.create_table('rule_tenant_usage',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('app_count', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_rule_tenant_usage_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('tenant_id', name=op.f('pk_rule_tenant_usage'))
    )
    op.create_table('automation_grant',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('rule_id', sa.Uuid(), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('execution_mode', sa.String(length=20), nullable=False),
    sa.Column('permissions', sa.JSON(), nullable=False),
    sa.Column('granted_by', sa.Uuid(), nullable=False),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("execution_mode IN ('plan_only', 'scheduled', 'message_event')", name=op.f('ck_automation_grant_execution_mode_allowed')),
    sa.ForeignKeyConstraint(['granted_by'], ['user.id'], name=op.f('fk_automation_grant_granted_by_user')),
    sa.ForeignKeyConstraint(['rule_id'], ['automation_rule.id'], name=op.f('fk_automation_grant_rule_id_automation_rule')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_automation_grant_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_automation_grant'))
    )
    with op.batch_alter_table('automation_grant', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_automation_grant_rule_id'), ['rule_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_automation_grant_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('automation_rule_revision',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('rule_id', sa.Uuid(), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('definition', sa.JSON(), nullable=False),
    sa.Column('definition_hash', sa.String(length=64), nullable=False),
    sa.Column('created_by', sa.Uuid(), nullable=True),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['created_by'], ['user.id'], name=op.f('fk_automation_rule_revision_created_by_user')),
    sa.ForeignKeyConstraint(['rule_id'], ['automation_rule.id'], name=op.f('fk_automation_rule_revision_rule_id_automation_rule')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_automation_rule_revision_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_automation_rule_revision')),
    sa.UniqueConstraint('rule_id', 'revision', name=op.f('uq_automation_rule_revision_rule_id_revision'))
    )
    with op.batch_alter_table('automation_rule_revision', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_automation_rule_revision_tenant_id'), ['tenant_id'], unique=False)

    with op.batch_alter_table('studio_generation', schema=None) as batch_op:
        batch_op.add_column(sa.Column('rule_draft', sa.JSON(), nullable=True))



def downgrade():
    with op.batch_alter_table('studio_generation', schema=None) as batch_op:
        batch_op.drop_column('rule_draft')

    with op.batch_alter_table('automation_rule_revision', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_automation_rule_revision_tenant_id'))

    op.drop_table('automation_rule_revision')
    with op.batch_alter_table('automation_grant', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_automation_grant_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_automation_grant_rule_id'))

    op.drop_table('automation_grant')
    op.drop_table('rule_tenant_usage')
    with op.batch_alter_table('automation_rule', schema=None) as batch_op:
        batch_op.drop_index('ix_automation_rule_tenant_id_updated_at')

    op.drop_table('automation_rule')
