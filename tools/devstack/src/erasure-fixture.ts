// Test data for the erasure tests: rows of one organization in every table of the four schemas, written as the
// database's superuser (what the services' code would write is not the subject; that every table is reached is).
import type pg from 'pg';

/** Rows of `organizationId` in every organization table: `rows` of each kind, ids derived from the organization. */
export async function seedOrganization(client: pg.Client, organizationId: number, rows: number): Promise<void> {
  const o = organizationId;
  const uid = (i: string) => `'U' || lpad('${o}', 3, '0') || lpad((${i})::text, 6, '0')`;
  const base = o * 1_000_000;
  const statements = [
    `INSERT INTO users.organizations (id, name, alias) OVERRIDING SYSTEM VALUE VALUES (${o}, 'Organization ${o}', 'org-${o}')`,
    `INSERT INTO users.users (id, user_name, emails, organization_id)
       SELECT ${uid('i')}, 'user' || i || '@org${o}.example',
              jsonb_build_array(jsonb_build_object('value', 'user' || i || '@org${o}.example')), ${o}
         FROM generate_series(1, $1) i`,
    // users.user_email_values: written by the users table's trigger from each user's e-mails.
    `INSERT INTO users.scim_tokens (id, organization_id, name, secret_sha256, expires_at)
       SELECT gen_random_uuid(), ${o}, 'token ' || i, sha256(('secret' || ${o} || '-' || i)::bytea), now() + interval '1 day'
         FROM generate_series(1, $1) i`,
    `INSERT INTO users.provisioning_audit (occurred_at, actor, operation, user_id, organization_id)
       SELECT now(), 'seed', 'create', ${uid('i')}, ${o} FROM generate_series(1, $1) i`,
    `INSERT INTO users.outbox (id, event_type, user_id, occurred_at, payload, organization_id)
       SELECT gen_random_uuid(), 'user.deactivated', ${uid('i')}, now(), '{}', ${o} FROM generate_series(1, $1) i`,
    // Past exports (expired: the one-running-export index allows any number).
    `INSERT INTO users.organization_exports (id, organization_id, status)
       SELECT gen_random_uuid(), ${o}, 'expired' FROM generate_series(1, $1) i`,
    `INSERT INTO groups.teams (id, display_name, organization_id) OVERRIDING SYSTEM VALUE
       SELECT ${base} + i, 'Team ' || i, ${o} FROM generate_series(1, $1) i`,
    `INSERT INTO groups.member_organizations (user_id, organization_id)
       SELECT ${uid('i')}, ${o} FROM generate_series(1, $1) i`,
    `INSERT INTO groups.team_members (team_id, user_id, organization_id)
       SELECT ${base} + i, ${uid('i')}, ${o} FROM generate_series(1, $1) i`,
    `INSERT INTO groups.provisioning_audit (occurred_at, actor, operation, team_id, organization_id)
       SELECT now(), 'seed', 'create', ${base} + i, ${o} FROM generate_series(1, $1) i`,
    `INSERT INTO drives.drives (id, user_id, started_at, ended_at, entry, description, organization_id) OVERRIDING SYSTEM VALUE
       SELECT ${base} + i, ${uid('i')}, now() - interval '1 hour', now(), 'manual', 'to the client', ${o}
         FROM generate_series(1, $1) i`,
    `INSERT INTO drives.drive_reports (drive_id, group_id, status, ended_at, organization_id)
       SELECT ${base} + i, ${base} + i, 'submitted', now(), ${o} FROM generate_series(1, $1) i`,
    `INSERT INTO drives.review_comments (drive_id, text, user_email, organization_id)
       SELECT ${base} + i, 'looks right', 'user' || i || '@org${o}.example', ${o} FROM generate_series(1, $1) i`,
    `INSERT INTO drives.drive_tombstones (drive_id, user_id, drive, organization_id)
       SELECT ${base} + 500000 + i, ${uid('i')}, '{}', ${o} FROM generate_series(1, $1) i`,
    `INSERT INTO drives.report_tombstones (drive_id, group_id, user_id, organization_id)
       SELECT ${base} + 500000 + i, ${base} + i, ${uid('i')}, ${o} FROM generate_series(1, $1) i`,
    `INSERT INTO drives.outbox (id, event_type, user_id, occurred_at, payload, organization_id)
       SELECT gen_random_uuid(), 'drive.reported', ${uid('i')}, now(), '{}', ${o} FROM generate_series(1, $1) i`,
    `INSERT INTO webhooks.subscriptions (id, group_id, url, events, secret, organization_id)
       SELECT gen_random_uuid(), ${base} + i, 'https://hooks.example/' || i, ARRAY['drive.reported'], 'whsec_x', ${o}
         FROM generate_series(1, $1) i`,
    `INSERT INTO webhooks.events (id, event_type, group_id, occurred_at, data, organization_id)
       SELECT gen_random_uuid(), 'drive.reported', ${base} + i, now(), '{}', ${o} FROM generate_series(1, $1) i`,
    `INSERT INTO webhooks.paused_organizations (organization_id) VALUES (${o})`,
    `INSERT INTO webhooks.deliveries (subscription_id, event_id, organization_id)
       SELECT s.id, e.id, ${o}
         FROM (SELECT id, row_number() OVER (ORDER BY id) n FROM webhooks.subscriptions WHERE organization_id = ${o}) s
         JOIN (SELECT id, row_number() OVER (ORDER BY id) n FROM webhooks.events WHERE organization_id = ${o}) e USING (n)`,
  ];
  for (const statement of statements)
    await client.query(statement, statement.includes('$1') ? [rows] : []).catch((err: Error) => {
      throw new Error(`${err.message} in ${statement}`);
    });
}
