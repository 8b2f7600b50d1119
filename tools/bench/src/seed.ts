// The data `npm run bench` measures: volume users in teams of 100 with their drives (the seeder's generateVolume),
// review comments on some reported drives, and one "sync" team whose admin walks `walk` reported drives.
import { DECLARE_VOLUME_ORGANIZATION, generateVolume } from '@mileage/devstack';
import pg from 'pg';

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

/** Sync team reports per statement. */
const WALK_CHUNK = 100_000;
/** Connections writing them at once (the machine has 2 cores). */
const SEED_WRITERS = 2;

export const volumeUserId = (n: number) => `V${String(n).padStart(9, '0')}`;

export async function seedBench(
  client: pg.Client,
  databaseUrl: string,
  options: { users: number; drives: number; callers: number; walk: number; log?: (msg: string) => void },
): Promise<BenchData> {
  const log = options.log ?? (() => {});
  const phases: string[] = [];
  const phase = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    const result = await run();
    phases.push(`${name} ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return result;
  };
  // A bulk load, not a workload: the drives' secondary indexes are dropped before it and built once after it (at 10⁷
  // reports, keeping them live made the load slow down as they grew: 5.8 M reports in 13 minutes); the seeding
  // session neither waits for WAL flushes at commit nor fires the foreign-key triggers (every row it writes refers to
  // a row it wrote before). The server keeps fsync on, and the CHECKPOINT at the end puts everything on disk before
  // anything is measured.
  await client.query(DECLARE_VOLUME_ORGANIZATION);
  await client.query(`SET synchronous_commit = off`);
  await client.query(`SET session_replication_role = replica`);
  await client.query(`SET maintenance_work_mem = '1GB'`);
  const { rows: secondary } = await client.query<{ name: string; def: string }>(
    `SELECT indexname AS name, indexdef AS def FROM pg_indexes
      WHERE schemaname = 'drives' AND tablename IN ('drives', 'drive_reports', 'review_comments')
        AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE connamespace = 'drives'::regnamespace)
      ORDER BY indexname`,
  );
  for (const index of secondary) await client.query(`DROP INDEX drives.${index.name}`);
  await phase('volume', () => generateVolume(client, { users: options.users, drives: options.drives }));
  // The volume users as an identity provider provisions them, so that a SCIM lookup renders every kind of attribute:
  // an externalId and displayName of their own, an attribute kept as sent (title, name.middleName) and the
  // enterprise extension.
  await phase('scim attributes', () =>
    client.query(
      `UPDATE users.users
        SET external_id = 'ext-' || substr(id, 2), display_name = 'Volume Driver ' || ltrim(substr(id, 2), '0'),
            scim_attributes = jsonb_build_object('title', 'Driver', 'name', jsonb_build_object('middleName', 'M')),
            enterprise = jsonb_build_object('employeeNumber', substr(id, 2), 'costCenter', 'CC-' || (ltrim(substr(id, 2), '0')::int % 10))
      WHERE id LIKE 'V%'`,
    ),
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
  await client.query(
    `INSERT INTO groups.member_organizations (user_id, organization_id)
     SELECT DISTINCT user_id, 1 FROM groups.team_members ON CONFLICT DO NOTHING`,
  );
  // The sync team's drives, the same rows with the same ids as one writer inserting the chunks in turn would make
  // (each chunk's times spread up to a day ago), written by SEED_WRITERS connections at once, a chunk at a time.
  const base = (await client.query<{ base: string }>(`SELECT coalesce(max(id), 0) AS base FROM drives.drives`)).rows[0]!
    .base;
  const chunks = Math.ceil(options.walk / WALK_CHUNK);
  let next = 0;
  let written = 0;
  const writer = async () => {
    const own = new pg.Client(databaseUrl);
    own.on('error', () => {}); // a lost connection rejects the query in flight, which ends the seeding
    await own.connect();
    try {
      await own.query(DECLARE_VOLUME_ORGANIZATION);
      await own.query(`SET synchronous_commit = off`);
      await own.query(`SET session_replication_role = replica`);
      for (let chunk = next++; chunk < chunks; chunk = next++) {
        const made = chunk * WALK_CHUNK;
        await own.query(
          `WITH ins AS (
             INSERT INTO drives.drives (id, user_id, started_at, ended_at, distance_amount, distance_units, value_amount,
                                        value_currency, entry, classification, purpose, start_location, end_location,
                                        created_at, modified_at)
             SELECT $5::bigint + g, 'V' || lpad((2 + g % $2::int)::text, 9, '0'), t, t + interval '25 minutes', 12.5, 'mi', 875, 'USD',
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
          [made, drivers, Math.min(WALK_CHUNK, options.walk - made), walkGroup, base],
        );
        written += Math.min(WALK_CHUNK, options.walk - made);
        if (chunks > 10 && (written / WALK_CHUNK) % 10 === 0) log(`  ${written} of ${options.walk} sync team reports`);
      }
    } finally {
      await own.end();
    }
  };
  await phase('sync team reports', async () => {
    await Promise.all(Array.from({ length: Math.min(SEED_WRITERS, chunks) }, writer));
    await client.query(`SELECT setval(pg_get_serial_sequence('drives.drives', 'id'), max(id)) FROM drives.drives`);
  });
  // Review comments on about one reported drive in six (two on one in twelve), as a payroll review leaves them.
  await phase('review comments', () =>
    client.query(
      `INSERT INTO drives.review_comments (drive_id, text, user_email, created_at)
       SELECT r.drive_id, c.text, 'reviewer@example.com', r.modified_at
         FROM drives.drive_reports r
         JOIN (VALUES (1, 'Checked against the calendar'), (2, 'Toll receipt attached')) AS c(n, text)
           ON r.drive_id % 6 = 0 AND (c.n = 1 OR r.drive_id % 12 = 0)`,
    ),
  );
  await client.query(`SET session_replication_role = origin`);
  await phase('indexes', async () => {
    // Two builds at a time (each with PostgreSQL's parallel workers), on the seeding connection and one more.
    const other = new pg.Client(databaseUrl);
    other.on('error', () => {});
    await other.connect();
    try {
      await other.query(`SET maintenance_work_mem = '1GB'`);
      let i = 0;
      const build = async (c: pg.Client) => {
        for (let index = secondary[i++]; index; index = secondary[i++]) await c.query(index.def);
      };
      await Promise.all([build(client), build(other)]);
    } finally {
      await other.end();
    }
  });
  // Vacuumed, analysed and checkpointed now, so that neither autovacuum nor first-read hint-bit writes land in a
  // measured run (they did: PostgreSQL's CPU per request then depended on which target ran first).
  await phase('vacuum', () =>
    client.query(
      'VACUUM (ANALYZE) users.users, groups.teams, groups.team_members, drives.drives, drives.drive_reports, drives.review_comments',
    ),
  );
  await phase('checkpoint', () => client.query('CHECKPOINT'));
  await client.query(`RESET ALL`);
  log(`Seeding phases: ${phases.join(', ')}`);
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
