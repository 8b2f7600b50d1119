#!/usr/bin/env node
// Runs the test suites against real servers: one throw-away embedded PostgreSQL and one redis-server
// for the whole run, exposed to the tests as TEST_DATABASE_URL and TEST_REDIS_URL.
// Usage: node tools/testenv/run.mjs <dist folders or test files...>
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, sep } from 'node:path';
import { startPostgres } from '@mileage/devstack';
import { freePort } from '@mileage/runtime/config';
import { findRedisServer } from './redis.mjs';

/**
 * The test files of the arguments: a folder stands for every `*.test.js` below it. Listed here rather than left to
 * `node --test`, which reads a folder argument as a module to run on Node.js 22 and later (and so ran no test).
 */
function testFiles(args) {
  return args.flatMap((arg) => {
    if (!statSync(arg, { throwIfNoEntry: false })?.isDirectory()) return [arg];
    const found = readdirSync(arg, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.test.js') && !f.split(sep).includes('node_modules'))
      .sort()
      .map((f) => join(arg, f))
      .filter((file) => !staleOutput(arg, file));
    if (found.length === 0) throw new Error(`no *.test.js below ${arg}: was it built?`);
    return found;
  });
}

/**
 * tsc does not delete what it once emitted for a source file that is gone: such a test would run code that no longer
 * exists. A `dist` test whose `src` twin is missing is deleted (and said), so an incremental build tests what is there.
 */
function staleOutput(distDir, file) {
  const srcDir = join(dirname(distDir), 'src');
  if (basename(distDir) !== 'dist' || !existsSync(srcDir)) return false;
  const source = join(srcDir, file.slice(distDir.length + 1).replace(/\.js$/, '.ts'));
  if (existsSync(source)) return false;
  console.error(`removing stale build output ${file} (its source ${source} is gone)`);
  rmSync(file, { force: true });
  return true;
}

let targets;
try {
  targets = testFiles(process.argv.slice(2));
} catch (err) {
  console.error(err.message);
  process.exit(2);
}
if (targets.length === 0) {
  console.error('usage: run.mjs <test folders or files...>');
  process.exit(2);
}

/** Resolves once something accepts TCP connections on the port (the child is watched for an early exit). */
async function listening(port, child, name) {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with status ${child.exitCode}`);
    const ok = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${name} did not listen on port ${port} within 10 s`);
}

let redisServer;
try {
  redisServer = findRedisServer();
} catch (err) {
  console.error(`npm test needs a real Redis for the rate-limit tests: ${err.message}`);
  process.exit(2);
}

const workdir = mkdtempSync(join(tmpdir(), 'mileage-test-'));
const redisPort = await freePort();
let pg;
let redis;
let child;
let exitCode = 1;
// Ctrl-C reaches the test run too; this process then waits for it and cleans up below.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child?.kill(signal));
try {
  pg = await startPostgres({
    dir: workdir,
    port: await freePort(),
    password: 'test-' + Math.random().toString(36).slice(2),
    persistent: false,
    // Throw-away data: durability costs time and buys nothing.
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '300' },
    log: (message) => console.error(message),
    onPostgresError: (message) => console.error('[postgres]', message),
  });
  redis = spawn(
    redisServer.command,
    ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore', env: redisServer.env },
  );
  await listening(redisPort, redis, 'redis-server');
  const env = {
    ...process.env,
    TEST_DATABASE_URL: pg.adminUrl,
    TEST_REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
  };
  child = spawn(process.execPath, ['--test', '--test-concurrency=1', ...targets], { stdio: 'inherit', env });
  exitCode = await new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
} catch (err) {
  console.error(`test environment failed: ${err.message ?? err}`);
} finally {
  redis?.kill('SIGTERM');
  await pg?.stop().catch(() => {});
  rmSync(workdir, { recursive: true, force: true });
}
process.exit(exitCode);
