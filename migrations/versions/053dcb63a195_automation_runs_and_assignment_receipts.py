"""automation runs and assignment receipts; AI points for semantic routing

Revision ID: 053dcb63a195
Revises: aad320c506d7
Create Date: 2026-11-23 19:17:10.671628

"""
from alembic import op
import sqlalchemy as sa

import core.db


# revision identifiers, used by Alembic.
revision = '053dcb63a195'
down_revision = 'aad320c506d7'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('ai_points_entry', schema=None) as batch_op:
        batch_op.drop_constraint(op.f('ck_ai_points_entry_kind_allowed'), type_='check')
        batch_op.create_check_constraint(
            'kind_allowed', "kind IN ('generation', 'intent', 'semantic_preview', 'semantic_routing')")

    op.create_table('assignment_receipt',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('command_key', sa.String(length=80), nullable=False),
    sa.Column('conversation_id', sa.Uuid(), nullable=False),
    sa.Column('target_member_id', sa.Uuid(), nullable=False),
    sa.Column('snapshot', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('reason', sa.String(length=60), nullable=True),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("status IN ('pending', 'sending', 'applied', 'state_changed', 'rejected', 'command_conflict', 'uncertain', 'cancelled')", name=op.f('ck_assignment_receipt_status_allowed')),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversation.id'], name=op.f('fk_assignment_receipt_conversation_id_conversation')),
    sa.ForeignKeyConstraint(['target_member_id'], ['member.id'], name=op.f('fk_assignment_receipt_target_member_id_member')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_assignment_receipt_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_assignment_receipt')),
    sa.UniqueConstraint('command_key', 'conversation_id', name=op.f('uq_assignment_receipt_command_key_conversation_id'))
    )
    with op.batch_alter_table('assignment_receipt', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_assignment_receipt_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('automation_run',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('rule_id', sa.Uuid(), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('grant_id', sa.Uuid(), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('mode', sa.String(length=20), nullable=False),
    sa.Column('executed', sa.Boolean(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('planned_for', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('message_id', sa.Uuid(), nullable=True),
    sa.Column('scanned', sa.Integer(), nullable=False),
    sa.Column('planned_count', sa.Integer(), nullable=False),
    sa.Column('schedule_execution_state', sa.String(length=20), nullable=True),
    sa.Column('schedule_execution_code', sa.String(length=60), nullable=True),
    sa.Column('requested_by', sa.Uuid(), nullable=True),
    sa.Column('approved_by', sa.Uuid(), nullable=True),
    sa.Column('created_at', core.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('started_at', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('finished_at', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('execution_requested_at', core.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.CheckConstraint("kind IN ('manual', 'scheduled', 'message_event')", name=op.f('ck_automation_run_kind_allowed')),
    sa.CheckConstraint("status IN ('queued', 'running', 'complete', 'partial', 'cancelled', 'failed', 'missed')", name=op.f('ck_automation_run_status_allowed')),
    sa.ForeignKeyConstraint(['approved_by'], ['user.id'], name=op.f('fk_automation_run_approved_by_user')),
    sa.ForeignKeyConstraint(['grant_id'], ['automation_grant.id'], name=op.f('fk_automation_run_grant_id_automation_grant')),
    sa.ForeignKeyConstraint(['message_id'], ['message.id'], name=op.f('fk_automation_run_message_id_message')),
    sa.ForeignKeyConstraint(['requested_by'], ['user.id'], name=op.f('fk_automation_run_requested_by_user')),
    sa.ForeignKeyConstraint(['rule_id'], ['automation_rule.id'], name=op.f('fk_automation_run_rule_id_automation_rule')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_automation_run_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_automation_run')),
    sa.UniqueConstraint('rule_id', 'message_id', name=op.f('uq_automation_run_rule_id_message_id'))
    )
    with op.batch_alter_table('automation_run', schema=None) as batch_op:
        batch_op.create_index('ix_automation_run_rule_id_created_at', ['rule_id', 'created_at'], unique=False)
        batch_op.create_index('ix_automation_run_tenant_id_status', ['tenant_id', 'status'], unique=False)
        batch_op.create_index('uq_automation_run_scheduled_slot', ['rule_id', 'planned_for'], unique=True,
                              postgresql_where=sa.text("kind = 'scheduled'"), sqlite_where=sa.text("kind = 'scheduled'"))

    op.create_table('automation_run_item',
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('run_id', sa.Uuid(), nullable=False),
    sa.Column('conversation_id', sa.Uuid(), nullable=False),
    sa.Column('planned', sa.Boolean(), nullable=False),
    sa.Column('target_member_id', sa.Uuid(), nullable=True),
    sa.Column('reason', sa.String(length=60), nullable=False),
    sa.Column('detail', sa.JSON(), nullable=True),
    sa.Column('snapshot', sa.JSON(), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversation.id'], name=op.f('fk_automation_run_item_conversation_id_conversation')),
    sa.ForeignKeyConstraint(['run_id'], ['automation_run.id'], name=op.f('fk_automation_run_item_run_id_automation_run')),
    sa.ForeignKeyConstraint(['target_member_id'], ['member.id'], name=op.f('fk_automation_run_item_target_member_id_member')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenant.id'], name=op.f('fk_automation_run_item_tenant_id_tenant')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_automation_run_item')),
    sa.UniqueConstraint('run_id', 'conversation_id', name=op.f('uq_automation_run_item_run_id_conversation_id'))
    )
    with op.batch_alter_table('automation_run_item', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_automation_run_item_tenant_id'), ['tenant_id'], unique=False)



def downgrade():
    with op.batch_alter_table('ai_points_entry', schema=None) as batch_op:
        batch_op.drop_constraint(op.f('ck_ai_points_entry_kind_allowed'), type_='check')
        batch_op.create_check_constraint('kind_allowed', "kind IN ('generation', 'intent', 'semantic_preview')")

    with op.batch_alter_table('automation_run_item', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_automation_run_item_tenant_id'))

    op.drop_table('automation_run_item')
    with op.batch_alter_table('automation_run', schema=None) as batch_op:
        batch_op.drop_index('uq_automation_run_scheduled_slot')
        batch_op.drop_index('ix_automation_run_tenant_id_status')
        batch_op.drop_index('ix_automation_run_rule_id_created_at')

    op.drop_table('automation_run')
    with op.batch_alter_table('assignment_receipt', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_assignment_receipt_tenant_id'))

    op.drop_table('assignment_receipt')
