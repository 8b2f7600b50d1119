import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import pg from 'pg';

interface Secrets {
  postgresPassword: string;
  rolePasswords: Record<string, string>;
  /** HMAC key of the gateway's page cursors. */
  cursorSecret?: string;
  /** HMAC key of the gateway's attestation of SCIM actors, shared with the SCIM service. */
  actorAttestationSecret?: string;
  /** The Webhooks service's key that encrypts signing secrets at rest. */
  webhooksSecretKey?: string;
}

export function loadSecrets(dataDir: string): Secrets {
  const file = path.join(dataDir, 'secrets.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Secrets;
  const secrets: Secrets = { postgresPassword: randomBytes(18).toString('base64url'), rolePasswords: {} };
  saveSecrets(dataDir, secrets);
  return secrets;
}

export function saveSecrets(dataDir: string, secrets: Secrets): void {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'secrets.json');
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  chmodSync(file, 0o600);
}

/** A service's two login roles: the schema's owner (migrations) and the runtime role (DML only, granted by them). */
export interface ServiceRoles {
  owner: { role: string; password: string };
  runtime: { role: string; password: string };
}

/**
 * Least privilege: per service a login role that owns only its schema (`mileage_<schema>`, the migrations run as it)
 * and a login role the service runs as (`mileage_<schema>_app`), which owns nothing: the migrations give it USAGE on
 * the schema and DML on its tables (docs/architecture.md, "Database roles"). Idempotent; passwords are generated
 * once and kept in dataDir/secrets.json (mode 0600).
 */
export async function provisionServiceRoles(
  adminUrl: string,
  dataDir: string,
  schemas: string[],
): Promise<Record<string, ServiceRoles>> {
  const secrets = loadSecrets(dataDir);
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const result: Record<string, ServiceRoles> = {};
  const login = async (role: string) => {
    const password = (secrets.rolePasswords[role] ??= randomBytes(18).toString('base64url'));
    const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
    const escaped = client.escapeLiteral(password);
    await client.query(
      exists.rowCount
        ? `ALTER ROLE ${role} LOGIN NOINHERIT PASSWORD ${escaped}`
        : `CREATE ROLE ${role} LOGIN NOINHERIT PASSWORD ${escaped}`,
    );
    return { role, password };
  };
  try {
    await client.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
    for (const schema of schemas) {
      const owner = await login(`mileage_${schema}`);
      const runtime = await login(`mileage_${schema}_app`);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema} AUTHORIZATION ${owner.role}`);
      await client.query(`ALTER SCHEMA ${schema} OWNER TO ${owner.role}`);
      await client.query(`REVOKE ALL ON SCHEMA ${schema} FROM PUBLIC`);
      result[schema] = { owner, runtime };
    }
  } finally {
    await client.end();
  }
  saveSecrets(dataDir, secrets);
  return result;
}
