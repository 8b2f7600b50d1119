// `npm run seed -- --users N --drives M`: benchmark volume into the running stack's database (npm start), or into
// DATABASE_URL when set (a role that may write every service schema).
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadSecrets } from './postgres';
import { generateVolume } from './volume';

const ROOT = path.resolve(__dirname, '..', '..', '..');

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { users: { type: 'string', default: '1000' }, drives: { type: 'string', default: '100000' } },
  });
  const users = Number(values.users);
  const drives = Number(values.drives);
  if (
    !Number.isInteger(users) ||
    users < 1 ||
    users > 10_000_000 ||
    !Number.isInteger(drives) ||
    drives < 0 ||
    drives > 100_000_000
  ) {
    process.stderr.write('usage: npm run seed -- --users N (1..10,000,000) --drives M (0..100,000,000)\n');
    process.exit(2);
  }
  let url = process.env.DATABASE_URL;
  if (!url) {
    const dataDir = process.env.DATA_DIR ?? path.join(ROOT, '.data');
    if (!existsSync(path.join(dataDir, 'secrets.json'))) {
      process.stderr.write('No DATABASE_URL and no embedded database: start the stack with `npm start` first.\n');
      process.exit(2);
    }
    url = `postgres://postgres:${encodeURIComponent(loadSecrets(dataDir).postgresPassword)}@127.0.0.1:${process.env.EMBEDDED_POSTGRES_PORT ?? 54329}/postgres`;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const started = Date.now();
  try {
    const result = await generateVolume(client, {
      users,
      drives,
      log: (msg) => process.stdout.write(`  ${msg} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`),
    });
    process.stdout.write(`seeded ${JSON.stringify(result)} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  } finally {
    await client.end();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`seed failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
