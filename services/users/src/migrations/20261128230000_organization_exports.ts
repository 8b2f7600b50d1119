import { organizationIsolationStatements } from '@mileage/runtime/database';
import type { Knex } from 'knex';

// Organization exports (CONTRACT §8): the job record of each export, under organization isolation like every
// tenant table, and the provisioning trail's entries about exports (requested, downloaded, expired).
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE organization_exports (
      id             uuid        PRIMARY KEY,
      organization_id bigint     NOT NULL REFERENCES organizations (id),
      status         text        NOT NULL DEFAULT 'queued'
                                 CHECK (status IN ('queued', 'running', 'completed', 'failed', 'expired')),
      requested_at   timestamptz NOT NULL DEFAULT now(),
      started_at     timestamptz,
      completed_at   timestamptz,
      expires_at     timestamptz,
      phase          text        NOT NULL DEFAULT 'queued',
      rows_written   bigint      NOT NULL DEFAULT 0,
      size_bytes     bigint,
      sha256         text,
      failure_reason text,
      -- The job's claim: which worker runs it and until when its claim holds (a worker that died lets it go).
      claimed_until  timestamptz
    )
  `);
  // At most one export of an organization queued or running at a time (the 409 of §8, also between replicas).
  await knex.raw(`CREATE UNIQUE INDEX organization_exports_one_running_idx ON organization_exports (organization_id)
                  WHERE status IN ('queued', 'running')`);
  await knex.raw(`CREATE INDEX organization_exports_organization_idx
                  ON organization_exports (organization_id, requested_at DESC)`);
  await knex.raw(`CREATE INDEX organization_exports_queue_idx ON organization_exports (requested_at)
                  WHERE status IN ('queued', 'running')`);
  for (const statement of organizationIsolationStatements('organization_exports')) await knex.raw(statement);

  // The trail's entries about an export name it, as others name a user or a SCIM token.
  await knex.raw(`ALTER TABLE provisioning_audit ADD COLUMN export_id uuid`);
  await knex.raw(`ALTER TABLE provisioning_audit DROP CONSTRAINT IF EXISTS provisioning_audit_resource_check,
    ADD CONSTRAINT provisioning_audit_resource_check CHECK (num_nonnulls(user_id, scim_token_id, export_id) = 1)`);
  await knex.raw(`ALTER TABLE provisioning_audit DROP CONSTRAINT IF EXISTS provisioning_audit_operation_check,
    ADD CONSTRAINT provisioning_audit_operation_check
      CHECK (operation IN ('create', 'replace', 'patch', 'delete', 'revoke', 'export', 'download', 'expire'))`);
}

export async function down(knex: Knex): Promise<void> {
  // The trail is append-only: its export entries stay (without the export's id), so the older checks come back
  // unvalidated.
  await knex.raw(`ALTER TABLE provisioning_audit DROP CONSTRAINT IF EXISTS provisioning_audit_operation_check,
    ADD CONSTRAINT provisioning_audit_operation_check
      CHECK (operation IN ('create', 'replace', 'patch', 'delete', 'revoke')) NOT VALID`);
  await knex.raw(`ALTER TABLE provisioning_audit DROP CONSTRAINT IF EXISTS provisioning_audit_resource_check,
    ADD CONSTRAINT provisioning_audit_resource_check CHECK ((user_id IS NULL) <> (scim_token_id IS NULL)) NOT VALID`);
  await knex.raw(`ALTER TABLE provisioning_audit DROP COLUMN export_id`);
  await knex.raw(`DROP TABLE organization_exports`);
}
