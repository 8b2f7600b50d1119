// The SCIM lookup with many organizations: `npm run bench` measures it first with the one organization of the volume
// (its users all in organization 1), then again after seeding more organizations whose users have the same userNames
// (the hard case for a per-organization index: every name exists in every organization), lookups spread over every
// organization's own SCIM secret token. The figures of the second run should hold within 10 % of the first.
import { createHash } from 'node:crypto';
import { newScimSecretToken } from '@mileage/runtime/formats';
import type { BenchStack } from './stack';

type Sql = BenchStack['sql'];

/** A SCIM secret token as the Users service mints it: the secret is shown once, only its SHA-256 is stored. */
export async function insertScimToken(sql: Sql, organizationId: number): Promise<string> {
  const secret = newScimSecretToken();
  await sql(
    `INSERT INTO users.scim_tokens (id, organization_id, name, secret_sha256)
     VALUES (gen_random_uuid(), $1, 'bench', $2)`,
    [organizationId, createHash('sha256').update(secret).digest()],
  );
  return secret;
}

export interface BenchOrganizations {
  /** One SCIM secret token per organization, organization 1's first. */
  tokens: string[];
  /** The userNames every organization has (those of organization 1's volume users). */
  userNames: string[];
}

/**
 * Adds organizations 2…`count` (bench-2, …), each with a copy of organization 1's volume users (same userNames and
 * attributes, ids O<org><n>), and one SCIM token per organization. Runs as the superuser: no policy applies.
 */
export async function seedOrganizations(sql: Sql, count: number): Promise<BenchOrganizations> {
  const volume = await sql<{ user_name: string }>(
    `SELECT user_name FROM users.users WHERE organization_id = 1 AND id LIKE 'V%' ORDER BY id`,
  );
  const created = await sql<{ id: string }>(
    `INSERT INTO users.organizations (name, alias)
     SELECT 'Bench Organization ' || g, 'bench-' || g FROM generate_series(2, $1::int) g RETURNING id`,
    [count],
  );
  const organizationIds = created.map((r) => Number(r.id));
  // An id of 10 characters: O, three digits of the organization's position, six of the volume user's number.
  await sql(
    `INSERT INTO users.users (id, organization_id, user_name, given_name, family_name, formatted_name, display_name,
                              emails, active, external_id, timezone, enterprise, scim_attributes)
     SELECT 'O' || lpad(o.position::text, 3, '0') || right(u.id, 6), o.id, u.user_name, u.given_name, u.family_name,
            u.formatted_name, u.display_name, u.emails, u.active, u.external_id, u.timezone, u.enterprise,
            u.scim_attributes
       FROM users.users u
       CROSS JOIN unnest($1::bigint[]) WITH ORDINALITY AS o (id, position)
      WHERE u.organization_id = 1 AND u.id LIKE 'V%'`,
    [organizationIds],
  );
  // As the first seeding ends: vacuumed and analysed now, so that autovacuum does not run inside the measured run.
  await sql('VACUUM (ANALYZE) users.users, users.user_email_values');
  await sql('CHECKPOINT');
  const tokens: string[] = [];
  for (const id of [1, ...organizationIds]) tokens.push(await insertScimToken(sql, id));
  return { tokens, userNames: volume.map((r) => r.user_name) };
}

/**
 * One lookup of every userName, request i as organization i mod n: the same names in the same order whatever the
 * number of organizations, so that the two runs differ only in the tokens. The load generator builds every request of
 * the list once per connection before it starts (inside the measured window), so the list stays as long as the
 * single-organization run's, whatever n.
 */
export function spreadLookups(organizations: BenchOrganizations): { path: string; headers: Record<string, string> }[] {
  const n = organizations.tokens.length;
  return organizations.userNames.map((userName, i) => ({
    path: `/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`,
    headers: { authorization: `Bearer ${organizations.tokens[i % n]!}` },
  }));
}

/**
 * Why the answers of a sample of lookups do not show isolation, or undefined: each organization finds exactly its own
 * user of that name (organization 1 its volume user V…, organization k its copy O<k>…), never another's.
 */
export async function isolationProblem(url: string, organizations: BenchOrganizations): Promise<string | undefined> {
  const n = organizations.tokens.length;
  for (let position = 0; position < n; position += Math.max(1, Math.floor(n / 10))) {
    const userName = organizations.userNames[position % organizations.userNames.length]!;
    const response = await fetch(`${url}/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`, {
      headers: { authorization: `Bearer ${organizations.tokens[position]!}` },
    });
    const body = (await response.json()) as { totalResults?: number; Resources?: { id: string }[] };
    const ids = (body.Resources ?? []).map((r) => r.id);
    const own = position === 0 ? /^V/ : new RegExp(`^O${String(position).padStart(3, '0')}`);
    if (response.status !== 200 || body.totalResults !== 1 || ids.length !== 1 || !own.test(ids[0]!))
      return `organization #${position + 1} looking up ${userName}: ${response.status} ${JSON.stringify(body).slice(0, 300)}`;
  }
  return undefined;
}
