// Finds a redis-server for the test environment, the way deploy/keycloak/run.sh finds Keycloak:
//   1. REDIS_SERVER (a path to the binary), or redis-server on the PATH;
//   2. the copy cached in ~/.cache/mileage-tools/redis-<version>;
//   3. Debian's redis-server package and the libraries it links, fetched with `apt-get download` (apt checks each file
//      against the signed archive index), unpacked with `dpkg-deb -x` into that cache, then checked by running it.
// Nothing is installed system-wide. The result is { command, env } to spawn it with, or an Error with a one-line reason.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

// Debian packages whose files the server needs beyond a base system (redis-server is a link into redis-tools).
const PACKAGES = ['redis-server', 'redis-tools', 'libjemalloc2', 'liblzf1'];
const CACHE_ROOT = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'mileage-tools');

function works(command, env = process.env) {
  const run = spawnSync(command, ['--version'], { env, encoding: 'utf8' });
  return run.status === 0 && /^Redis server v=/.test(run.stdout);
}

function cachedEnv(dir) {
  const lib = join(dir, 'usr/lib/x86_64-linux-gnu');
  return { ...process.env, LD_LIBRARY_PATH: [lib, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') };
}

function fromCache() {
  if (!existsSync(CACHE_ROOT)) return undefined;
  for (const name of readdirSync(CACHE_ROOT)
    .filter((n) => n.startsWith('redis-'))
    .sort()
    .reverse()) {
    const dir = join(CACHE_ROOT, name);
    const command = join(dir, 'usr/bin/redis-server');
    if (existsSync(command) && works(command, cachedEnv(dir))) return { command, env: cachedEnv(dir) };
  }
  return undefined;
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.error) throw new Error(`${command} is not available (${result.error.code ?? result.error.message})`);
  if (result.status !== 0) {
    const last = (result.stderr || result.stdout || '').trim().split('\n').pop();
    throw new Error(`${command} ${args[0]} failed: ${last}`);
  }
  return result.stdout;
}

function fetchFromDebian() {
  const download = mkdtempSync(join(CACHE_ROOT, '.download-'));
  // apt's unprivileged download user must be able to write the folder it downloads into.
  chmodSync(download, 0o777);
  try {
    const get = () => run('apt-get', ['download', '-qq', ...PACKAGES], { cwd: download });
    try {
      get();
    } catch (err) {
      // A machine whose package lists were never fetched knows no candidate; root can fetch them once.
      if (process.getuid?.() !== 0) throw err;
      run('apt-get', ['update', '-qq']);
      get();
    }
    const unpacked = join(download, 'root');
    for (const deb of readdirSync(download).filter((f) => f.endsWith('.deb'))) {
      run('dpkg-deb', ['-x', join(download, deb), unpacked]);
    }
    const command = join(unpacked, 'usr/bin/redis-server');
    const version = spawnSync(command, ['--version'], { env: cachedEnv(unpacked), encoding: 'utf8' }).stdout ?? '';
    const match = /v=(\d+\.\d+\.\d+)/.exec(version);
    if (!match) throw new Error(`the fetched redis-server does not run (${version.trim() || 'no output'})`);
    const dir = join(CACHE_ROOT, `redis-${match[1]}`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(unpacked, dir);
    return { command: join(dir, 'usr/bin/redis-server'), env: cachedEnv(dir) };
  } finally {
    rmSync(download, { recursive: true, force: true });
  }
}

/** @returns {{ command: string, env: NodeJS.ProcessEnv }} */
export function findRedisServer() {
  const explicit = process.env.REDIS_SERVER;
  if (explicit) {
    if (works(explicit)) return { command: explicit, env: process.env };
    throw new Error(`REDIS_SERVER=${explicit} does not run as redis-server --version`);
  }
  if (works('redis-server')) return { command: 'redis-server', env: process.env };
  const cached = fromCache();
  if (cached) return cached;
  mkdirSync(CACHE_ROOT, { recursive: true });
  try {
    return fetchFromDebian();
  } catch (err) {
    throw new Error(
      `no redis-server on the PATH and it could not be fetched from Debian's archive (${err.message}); ` +
        'install it (apt-get install -y redis-server) or set REDIS_SERVER to its path',
    );
  }
}
