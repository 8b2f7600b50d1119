import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

/**
 * A process that handles SIGTERM with handleShutdown while its only thread-pool thread is busy (a long pbkdf2), so
 * the stdout write of "shutting down" is still waiting when "stopped" is logged and the process exits.
 */
function stopWithBusyPool(steps: string): { lines: { msg: string }[]; status: number | null } {
  const script = `
    const crypto = require('node:crypto');
    const { createLogger } = require(${JSON.stringify(path.join(__dirname, '../telemetry/logger.js'))});
    const { handleShutdown } = require(${JSON.stringify(path.join(__dirname, 'shutdown.js'))});
    const logger = createLogger({ service: 'shutdown-test' });
    for (let i = 0; i < 200; i++) logger.info({ i }, 'working');
    handleShutdown(logger, ${steps}, 5000);
    crypto.pbkdf2('password', 'salt', 1_000_000, 32, 'sha256', () => {});
    process.kill(process.pid, 'SIGTERM');
    setInterval(() => {}, 1000);
  `;
  const child = spawnSync(process.execPath, ['-e', script], {
    env: { ...process.env, UV_THREADPOOL_SIZE: '1' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  const lines = child.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { msg: string });
  return { lines, status: child.status };
}

test('SIGTERM: every line is written, in order, before the process exits 0', () => {
  const { lines, status } = stopWithBusyPool(`[{ name: 'drain', run: () => logger.info('drained') }]`);
  assert.equal(status, 0);
  assert.deepEqual(
    lines.map((l) => l.msg),
    [...Array<string>(200).fill('working'), 'shutting down', 'drained', 'stopped'],
  );
});

test('SIGTERM with a failing step: the failure is logged in order and the process exits 1', () => {
  const { lines, status } = stopWithBusyPool(`[{ name: 'broken', run: () => { throw new Error('no'); } }]`);
  assert.equal(status, 1);
  assert.deepEqual(
    lines.slice(200).map((l) => l.msg),
    ['shutting down', 'shutdown step failed', 'stopped'],
  );
});
