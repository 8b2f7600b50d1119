// The data `npm run bench` measures: volume users in teams of 100 with their drives (the seeder's generateVolume),
// review comments on some reported drives, and one "sync" team whose admin walks `walk` reported drives.
import { generateVolume } from '@mileage/devstack';
import type pg from 'pg';

export interface BenchData {
  /** Callers: user ids V000000001…, each with a token of every /v1 scope. */
  callers: string[];
  /** Teams administered by a caller, with that admin: the reported-drives route's requests. */
  adminGroups: { groupId: number; adminId: string }[];
  /** The team the sync walk pages through, and its admin. */
  walkGroup: { groupId: number; adminId: string; reported: number };
  /** The userName of every volume user, for the SCIM lookup (`userName eq "…"`). */
  userNames: string[];
}

export const volumeUserId = (n: number) => `V${String(n).padStart(9, '0')}`;

export async function seedBench(
  client: pg.Client,
  options: { users: number; drives: number; callers: number; walk: number },
): Promise<BenchData> {
  await generateVolume(client, { users: options.users, drives: options.drives });
  // The volume users as an identity provider provisions them, so that a SCIM lookup renders every kind of attribute:
  // an externalId and displayName of their own, an attribute kept as sent (title, name.middleName) and the
  // enterprise extension.
  await client.query(
    `UPDATE users.users
        SET external_id = 'ext-' || substr(id, 2), display_name = 'Volume Driver ' || ltrim(substr(id, 2), '0'),
            scim_attributes = jsonb_build_object('title', 'Driver', 'name', jsonb_build_object('middleName', 'M')),
            enterprise = jsonb_build_object('employeeNumber', substr(id, 2), 'costCenter', 'CC-' || (ltrim(substr(id, 2), '0')::int % 10))
      WHERE id LIKE 'V%'`,
  );
  // The sync team: user 1 administers it, users 2–101 report every drive to it, all modified in the past (the list
  // stops at the sync horizon, now).
  const {
    rows: [team],
  } = await client.query<{ id: string }>(`INSERT INTO groups.teams (display_name) VALUES ('Sync Team') RETURNING id`);
  const walkGroup = Number(team!.id);
  const drivers = Math.min(100, options.users - 1);
  await client.query(
    `INSERT INTO groups.team_members (team_id, user_id, is_admin, is_driver)
     SELECT $1, 'V' || lpad(g::text, 9, '0'), g = 1, g > 1 FROM generate_series(1, $2::int + 1) g`,
    [walkGroup, drivers],
  );
  for (let made = 0; made < options.walk; made += 100_000) {
    const n = Math.min(100_000, options.walk - made);
    await client.query(
      `WITH ins AS (
         INSERT INTO drives.drives (user_id, started_at, ended_at, distance_amount, distance_units, value_amount,
                                    value_currency, entry, classification, purpose, start_location, end_location,
                                    created_at, modified_at)
         SELECT 'V' || lpad((2 + g % $2::int)::text, 9, '0'), t, t + interval '25 minutes', 12.5, 'mi', 875, 'USD',
                'automatic', 'business', 'Client visit',
                jsonb_build_object('name', 'Office', 'lat', '41.8781', 'lon', '-87.6298', 'time', to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                                   'address', jsonb_build_object('country', 'US', 'state', 'IL', 'city', 'Chicago', 'street', '1 Main St', 'postalCode', '60601')),
                jsonb_build_object('name', 'Client', 'lat', null, 'lon', null, 'time', to_char(t AT TIME ZONE 'UTC' + interval '25 minutes', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'address', null),
                t + interval '1 hour', t + interval '1 hour'
           FROM (SELECT g, date_trunc('milliseconds', now() - interval '30 days' + interval '29 days' * g / ($1::int + $3::int)) AS t
                   FROM generate_series($1::int + 1, $1::int + $3::int) g) s
         RETURNING id, ended_at, modified_at)
       INSERT INTO drives.drive_reports (drive_id, group_id, status, reported_at, modified_at, ended_at)
       SELECT id, $4, 'submitted', modified_at, modified_at, ended_at FROM ins`,
      [made, drivers, n, walkGroup],
    );
  }
  // Review comments on about one reported drive in six (two on one in twelve), as a payroll review leaves them.
  await client.query(
    `INSERT INTO drives.review_comments (drive_id, text, user_email, created_at)
     SELECT r.drive_id, c.text, 'reviewer@example.com', r.modified_at
       FROM drives.drive_reports r
       JOIN (VALUES (1, 'Checked against the calendar'), (2, 'Toll receipt attached')) AS c(n, text)
         ON r.drive_id % 6 = 0 AND (c.n = 1 OR r.drive_id % 12 = 0)`,
  );
  // Vacuumed, analysed and checkpointed now, so that neither autovacuum nor first-read hint-bit writes land in a
  // measured run (they did: PostgreSQL's CPU per request then depended on which target ran first).
  await client.query(
    'VACUUM (ANALYZE) users.users, groups.teams, groups.team_members, drives.drives, drives.drive_reports, drives.review_comments',
  );
  await client.query('CHECKPOINT');
  const { rows: admins } = await client.query<{ team_id: string; user_id: string }>(
    `SELECT team_id, user_id FROM groups.team_members WHERE is_admin AND team_id <> $1 AND user_id <= $2 ORDER BY team_id`,
    [walkGroup, volumeUserId(options.callers)],
  );
  return {
    callers: Array.from({ length: options.callers }, (_, i) => volumeUserId(i + 1)),
    adminGroups: admins.map((a) => ({ groupId: Number(a.team_id), adminId: a.user_id })),
    walkGroup: { groupId: walkGroup, adminId: volumeUserId(1), reported: options.walk },
    userNames: Array.from({ length: options.users }, (_, i) => `volume${i + 1}@example.com`),
  };
}
