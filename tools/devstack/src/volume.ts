import { ORGANIZATION_SETTING } from '@mileage/runtime/database';
import type pg from 'pg';

/** Declares, for a session's life, the organization its rows belong to: the tables' defaults take it. */
export const declareOrganization = (organizationId: number) => {
  if (!Number.isSafeInteger(organizationId) || organizationId < 1)
    throw new Error(`not an organization id: ${organizationId}`);
  return `SELECT set_config('${ORGANIZATION_SETTING}', '${organizationId}', false)`;
};

/** Declares, for a session's life, the organization its volume rows belong to (1): the tables' defaults take it. */
export const DECLARE_VOLUME_ORGANIZATION = declareOrganization(1);

/**
 * Generates realistic volume for benchmarks straight in the services' schemas, server-side
 * (INSERT … SELECT FROM generate_series), in chunks: users `V000000001`…, one group per 100 users (the first
 * user its admin, everyone a driver), drives spread over the last 90 days, and about a quarter of the business
 * drives reported to the driver's group. Demo data and everything a person does go through the services;
 * this is the one shortcut, for volume only. Everything it writes belongs to organization 1 (or `organization.id`, its
 * users' ids then starting with `organization.userPrefix` instead of V): the session declares it (the tables'
 * organization columns take the declared organization), and the Groups service's record of each member's
 * organization is written before the memberships that refer to it.
 */
export async function generateVolume(
  client: pg.Client,
  options: {
    users: number;
    drives: number;
    chunk?: number;
    log?: (msg: string) => void;
    /** Another organization than 1 (it must exist), and the one capital letter its volume users' ids start with. */
    organization?: { id: number; userPrefix: string };
  },
): Promise<{ users: number; groups: number; drives: number; reports: number }> {
  const log = options.log ?? (() => {});
  const users = options.users;
  const { id: organizationId, userPrefix } = options.organization ?? { id: 1, userPrefix: 'V' };
  if (!/^[A-Z]$/.test(userPrefix)) throw new Error(`a volume user prefix is one capital letter, not "${userPrefix}"`);
  // The prefix is one validated letter: written into the statements as the user ids' first character.
  const userId = (n: string) => `'${userPrefix}' || lpad(${n}::text, 9, '0')`;
  await client.query(declareOrganization(organizationId));
  const existing = (
    await client.query<{ n: string }>(`SELECT count(*) AS n FROM users.users WHERE id LIKE '${userPrefix}%'`)
  ).rows[0]!.n;
  if (Number(existing) < users) {
    await client.query(
      `INSERT INTO users.users (id, user_name, given_name, family_name, formatted_name, emails, timezone)
       SELECT ${userId('g')}, 'volume' || g || '@example.com', 'Volume', 'Driver ' || g, 'Volume Driver ' || g,
              jsonb_build_array(jsonb_build_object('value', 'volume' || g || '@example.com', 'type', 'work', 'primary', true)),
              (ARRAY['America/Chicago', 'America/Toronto', 'Europe/London'])[1 + g % 3]
         FROM generate_series($1::int + 1, $2::int) g`,
      [Number(existing), users],
    );
  }
  const groupCount = Math.ceil(users / 100);
  const groupsExisting = (
    await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM groups.teams WHERE display_name LIKE 'Volume Team %' AND organization_id = $1`,
      [organizationId],
    )
  ).rows[0]!.n;
  if (Number(groupsExisting) < groupCount) {
    await client.query(
      `INSERT INTO groups.member_organizations (user_id, organization_id)
       SELECT ${userId('g')}, $2 FROM generate_series(1, $1::int) g ON CONFLICT DO NOTHING`,
      [users, organizationId],
    );
    await client.query(
      `WITH made AS (
         INSERT INTO groups.teams (display_name) SELECT 'Volume Team ' || k FROM generate_series($1::int + 1, $2::int) k RETURNING id, display_name)
       INSERT INTO groups.team_members (team_id, user_id, is_admin, is_driver)
       SELECT made.id, ${userId('g')}, g % 100 = 1, true
         FROM made JOIN generate_series(1, $3::int) g ON made.display_name = 'Volume Team ' || ((g - 1) / 100 + 1)`,
      [Number(groupsExisting), groupCount, users],
    );
  }
  const chunk = options.chunk ?? 500_000;
  let made = 0;
  let reports = 0;
  while (made < options.drives) {
    const n = Math.min(chunk, options.drives - made);
    const {
      rows: [range],
    } = await client.query<{ first: string; last: string }>(
      `WITH ins AS (
         INSERT INTO drives.drives (user_id, started_at, ended_at, distance_amount, distance_units, value_amount, value_currency,
                                    toll_amount, toll_currency, entry, classification, purpose, created_at, modified_at)
         SELECT ${userId('(1 + (g % $2::int))')}, t, t + (interval '1 minute' * (10 + (g % 80))),
                d, 'mi', (d * 70)::bigint, 'USD',
                CASE WHEN g % 7 = 0 THEN 250 + (g % 900) END, CASE WHEN g % 7 = 0 THEN 'USD' END,
                CASE WHEN g % 4 = 0 THEN 'manual' ELSE 'automatic' END,
                (ARRAY['business', 'business', 'business', 'personal', 'unclassified'])[1 + g % 5],
                CASE WHEN g % 5 < 3 THEN 'Client visit' END,
                t + interval '2 hours', t + interval '2 hours' + (interval '1 second' * (g % 86400))
           FROM (SELECT g, date_trunc('milliseconds', now() - interval '90 days' + (interval '90 days' * ((g * 7919) % 1000003) / 1000003.0)) AS t,
                        round((1 + (g % 600) / 10.0)::numeric, 1) AS d
                   FROM generate_series($1::bigint + 1, $1::bigint + $3::bigint) g) s
         RETURNING id)
       SELECT min(id) AS first, max(id) AS last FROM ins`,
      [made, users, n],
    );
    const reported = await client.query(
      `INSERT INTO drives.drive_reports (drive_id, group_id, status, reported_at, modified_at, ended_at)
       SELECT d.id, m.team_id, 'submitted', d.modified_at, d.modified_at, d.ended_at
         FROM drives.drives d JOIN groups.team_members m ON m.user_id = d.user_id AND NOT m.is_admin
        WHERE d.id BETWEEN $1 AND $2 AND d.classification = 'business' AND d.id % 4 = 0
       ON CONFLICT DO NOTHING`,
      [range!.first, range!.last],
    );
    made += n;
    reports += reported.rowCount ?? 0;
    log(`${made} drives, ${reports} reports`);
  }
  await client.query('ANALYZE users.users');
  await client.query('ANALYZE groups.teams');
  await client.query('ANALYZE groups.team_members');
  await client.query('ANALYZE drives.drives');
  await client.query('ANALYZE drives.drive_reports');
  return { users, groups: groupCount, drives: made, reports };
}
