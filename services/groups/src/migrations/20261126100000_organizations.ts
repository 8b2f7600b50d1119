import { foreignKeyStatements } from '@mileage/runtime/database';
import type { Knex } from 'knex';

// Organizations (expand: runs before the rollout, while the previous release still serves). Every group, membership
// and provisioning audit entry belongs to one organization; what exists, and whatever a replica of the previous
// release (which declares none) writes during the rollout, lands in organization 1, the default organization of an
// upgraded installation. The contract phase (migrations/contract) then makes the defaults strict and isolates the
// organizations with row-level security.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE teams ADD COLUMN organization_id bigint NOT NULL DEFAULT 1 CHECK (organization_id > 0)`);
  // What a membership's composite key refers to.
  await knex.raw(`ALTER TABLE teams ADD CONSTRAINT teams_id_organization_key UNIQUE (id, organization_id)`);
  // An organization's groups in id order (ListGroups).
  await knex.raw(`CREATE INDEX teams_organization_idx ON teams (organization_id, id)`);

  // The organization of every user ever made a member of a group, recorded with the first membership and never
  // changed: a membership names its user's organization, which must be this one (the contract phase's foreign key).
  await knex.raw(`
    CREATE TABLE member_organizations (
      user_id         char(10) PRIMARY KEY CHECK (user_id ~ '^[A-Za-z0-9]{10}$'),
      organization_id bigint   NOT NULL CHECK (organization_id > 0),
      UNIQUE (user_id, organization_id)
    )
  `);
  await knex.raw(
    `INSERT INTO member_organizations (user_id, organization_id) SELECT DISTINCT user_id, 1 FROM team_members`,
  );

  // A membership belongs to its group's organization: the database refuses one that names another.
  await knex.raw(`ALTER TABLE team_members ADD COLUMN organization_id bigint NOT NULL DEFAULT 1`);
  for (const statement of foreignKeyStatements(
    'team_members',
    'team_members_team_organization_fkey',
    'FOREIGN KEY (team_id, organization_id) REFERENCES teams (id, organization_id) ON DELETE CASCADE',
  ))
    await knex.raw(statement);

  await knex.raw(`ALTER TABLE provisioning_audit ADD COLUMN organization_id bigint NOT NULL DEFAULT 1`);
  // The organization's trail, newest first (ListProvisioningEvents).
  await knex.raw(
    `CREATE INDEX provisioning_audit_organization_idx ON provisioning_audit (organization_id, occurred_at DESC, id DESC)`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE provisioning_audit DROP COLUMN organization_id`);
  await knex.raw(`ALTER TABLE team_members DROP COLUMN organization_id`);
  await knex.raw(`DROP TABLE member_organizations`);
  await knex.raw(`ALTER TABLE teams DROP COLUMN organization_id`);
}
