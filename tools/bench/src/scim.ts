// `npm run bench:scim`: does an identity provider's lookup cost the same at 1,000 users as at 1,000,000? Grows one
// database through the sizes given and, at each, times the filtered GETs that Entra ID and Okta send before every
// change, through the real SCIM service and the Users and Groups services over gRPC (sequential calls).
import { DECLARE_VOLUME_ORGANIZATION } from '@mileage/devstack';
import { createServer as createGroupsServer, openDatabase as openGroupsDatabase } from '@mileage/groups';
import { groupsV1, scimV1, usersV1 } from '@mileage/proto';
import { attestActor } from '@mileage/runtime/grpc';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import { createServer as createScimServer } from '@mileage/scim';
import { createServer as createUsersServer, openDatabase as openUsersDatabase } from '@mileage/users';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import pg from 'pg';
import { serveInProcess, timeAlternating, timeSequential, withBenchPostgres } from './sequential';
import { parseFlags } from './cli';

const ATTESTATION_SECRET = 'bench-actor-attestation-secret-0123456789';

const values = parseFlags('npm run bench:scim --', {
  sizes: { type: 'string', default: '1000,1000000' },
  calls: { type: 'string', default: '300' },
  /** Group sizes (at most 9,999: a group holds 10,000) at which PATCH adds and removes one member, at the last user count. */
  'group-members': { type: 'string', default: '2000,9999' },
  patches: { type: 'string', default: '100' },
  /** CI's check that the bench runs: a tiny size and few calls. */
  smoke: { type: 'boolean', default: false },
});
if (values.smoke) Object.assign(values, { sizes: '200', calls: '20', 'group-members': '50', patches: '10' });
const sizes = values.sizes.split(',').map(Number);
const calls = Number(values.calls);
const groupSizes = values['group-members'].split(',').filter(Boolean).map(Number);
const patches = Number(values.patches);
/** The bench's user n: B and n in 9 digits; the same in SQL, for the series `g`. */
const userId = (n: number) => `B${String(n).padStart(9, '0')}`;
const USER_ID_OF_G = `'B' || lpad(g::text, 9, '0')`;

/** Users u<n>@bench.example with ids B<9 digits>, external ids ext-<n>, one work address each; multi-row inserts. */
async function growUsers(admin: pg.Client, from: number, to: number): Promise<void> {
  // The Users service's triggers keep the lower-cased lookup copies and the e-mail values as for its own writes.
  const batch = 100_000;
  for (let start = from + 1; start <= to; start += batch) {
    const end = Math.min(to, start + batch - 1);
    await admin.query(
      `INSERT INTO users.users (id, user_name, given_name, family_name, display_name, emails, external_id, timezone)
       SELECT ${USER_ID_OF_G}, 'u' || g || '@bench.example', 'Given' || g, 'Family' || (g % 5000), 'User ' || g,
              jsonb_build_array(jsonb_build_object('value', 'u' || g || '@mail.bench.example', 'type', 'work', 'primary', true)),
              'ext-' || g, 'America/Chicago'
         FROM generate_series($1::int, $2::int) g`,
      [start, end],
    );
  }
  await admin.query('ANALYZE users.users');
}

async function main(): Promise<void> {
  const logger = createLogger({ service: 'scim-bench', level: 'silent' });
  await withBenchPostgres('scim-bench', async (url) => {
    const usersDb = openUsersDatabase({ url });
    const groupsDb = openGroupsDatabase({ url });
    for (const db of [usersDb, groupsDb]) await db.migrate();
    const users = await serveInProcess('users', createUsersServer({ knex: usersDb.knex }), usersV1.UsersServiceClient);
    const groups = await serveInProcess(
      'groups',
      createGroupsServer({ knex: groupsDb.knex }),
      groupsV1.GroupsServiceClient,
    );
    const scimService = createScimServer({
      users: users.client,
      groups: groups.client,
      logger,
      baseUrl: 'http://127.0.0.1:8080/scim/v2',
      metrics: new Metrics('scim'),
      attestation: { secrets: [ATTESTATION_SECRET], maxAgeSeconds: 60, replayCacheEntries: 100_000 },
    });
    const scimServed = await serveInProcess('scim', scimService, scimV1.ScimServiceClient);
    const scim = scimServed.client;
    const send = async (method: string, pathAndQuery: string, body?: unknown) => {
      const [p, q = ''] = pathAndQuery.split('?');
      // Signed as the gateway signs each request (part of what a request costs behind it).
      const request = {
        method,
        path: p!,
        query: q,
        headers: (body === undefined ? {} : { 'content-type': 'application/scim+json' }) as Record<string, string>,
        body: body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body)),
        clientId: 'bench',
        organizationId: 1,
      };
      const requestId = randomUUID();
      const actorAttestation = attestActor(ATTESTATION_SECRET, { ...request, actor: 'bench', requestId });
      const res = await scim.handleRequest({ ...request, actorAttestation }, { requestId });
      if (res.status !== 200)
        throw new Error(`${method} ${pathAndQuery} → ${res.status} ${Buffer.from(res.body).toString()}`);
      return JSON.parse(Buffer.from(res.body).toString()) as { totalResults: number; members?: unknown[] };
    };
    const get = (pathAndQuery: string) => send('GET', pathAndQuery);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    // Stopping the database after a failure ends this connection: the failure is what is reported.
    admin.on('error', () => {});
    // Everything seeded belongs to organization 1 (the tables' organization defaults take this session's).
    await admin.query(DECLARE_VOLUME_ORGANIZATION);
    // 200 groups for the displayName lookup.
    await admin.query(`INSERT INTO groups.teams (display_name) SELECT 'Team ' || g FROM generate_series(1, 200) g`);

    const results: Record<string, unknown>[] = [];
    let have = 0;
    for (const size of sizes) {
      const started = Date.now();
      await growUsers(admin, have, size);
      const seedSeconds = (Date.now() - started) / 1000;
      have = size;
      const pick = (i: number) => 1 + ((i * 7919) % size);
      const f = (filter: string) => encodeURIComponent(filter);
      const lookups: Record<string, (i: number) => string> = {
        userName: (i) => `/Users?filter=${f(`userName eq "U${pick(i)}@BENCH.example"`)}`,
        externalId: (i) => `/Users?filter=${f(`externalId eq "ext-${pick(i)}"`)}`,
        id: (i) => `/Users?filter=${f(`id eq "${userId(pick(i))}"`)}`,
        'emails.value': (i) =>
          `/Users?filter=${f(`emails[type eq "work" and value eq "u${pick(i)}@mail.bench.example"]`)}`,
        'emails.value (plain)': (i) => `/Users?filter=${f(`emails.value eq "u${pick(i)}@mail.bench.example"`)}`,
        'Groups displayName': (i) =>
          `/Groups?excludedAttributes=members&filter=${f(`displayName eq "team ${1 + (i % 200)}"`)}`,
        'GET /Users/{id}': (i) => `/Users/${userId(pick(i))}`,
      };
      const row: Record<string, unknown> = { users: size, seed_seconds: seedSeconds };
      const parts: string[] = [];
      for (const [name, build] of Object.entries(lookups)) {
        const sample = await get(build(1));
        if ('totalResults' in sample && sample.totalResults !== 1)
          throw new Error(`${name}: expected one match, got ${sample.totalResults}`);
        const t = await timeSequential(calls, (i) => get(build(i)));
        row[name] = t;
        parts.push(`${name} p50 ${t.p50.toFixed(2)} / p99 ${t.p99.toFixed(2)} ms`);
      }
      results.push(row);
      process.stdout.write(
        `${String(size).padStart(9)} users (seeded in ${seedSeconds.toFixed(1)} s): ${parts.join('; ')}\n`,
      );
    }

    // A group's membership write as Entra ID sends it: one member added, then removed, on a group of `members` users.
    const membership: Record<string, unknown>[] = [];
    for (const members of groupSizes.filter((m) => m < have)) {
      const { rows } = await admin.query<{ id: string }>(
        `INSERT INTO groups.teams (display_name) VALUES ($1) RETURNING id`,
        [`Members ${members}`],
      );
      const groupId = rows[0]!.id;
      await admin.query(
        `INSERT INTO groups.member_organizations (user_id)
         SELECT ${USER_ID_OF_G} FROM generate_series(1, $1::int) g ON CONFLICT DO NOTHING`,
        [members + 1],
      );
      await admin.query(
        `INSERT INTO groups.team_members (team_id, user_id, is_admin, is_driver)
         SELECT $1, ${USER_ID_OF_G}, false, true FROM generate_series(1, $2::int) g`,
        [groupId, members],
      );
      const newcomer = [{ value: userId(members + 1) }];
      const operation = (op: string) => ({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op, path: 'members', value: newcomer }],
      });
      const patch = (op: 'Add' | 'Remove', expected: number) => async () => {
        const answer = await send('PATCH', `/Groups/${groupId}`, operation(op));
        if (answer.members?.length !== expected) throw new Error(`PATCH: ${answer.members?.length} members answered`);
      };
      const [add, remove] = await timeAlternating(patches, patch('Add', members + 1), patch('Remove', members));
      // And the read an identity provider makes of it (members with their display names).
      const read = await timeSequential(patches, async () => {
        const answer = await get(`/Groups/${groupId}`);
        if (answer.members?.length !== members) throw new Error(`GET: ${answer.members?.length} members answered`);
      });
      membership.push({ members, add, remove, get: read });
      const ms = (t: { p50: number; p99: number }) => `p50 ${t.p50.toFixed(2)} / p99 ${t.p99.toFixed(2)} ms`;
      process.stdout.write(
        `group of ${members} members: PATCH adding one member ${ms(add)}; removing it ${ms(remove)}; ` +
          `GET ${ms(read)}\n`,
      );
    }
    await admin.end();
    for (const served of [scimServed, users, groups]) await served.stop();
    for (const db of [groupsDb, usersDb]) await db.close();
    if (values.smoke) return; // a smoke run's figures are not results
    const dir = path.join(__dirname, '..', 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'scim.json'),
      JSON.stringify(
        { date: new Date().toISOString(), node: process.version, calls, results, patches, membership },
        null,
        2,
      ) + '\n',
    );
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`scim bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
