// `npm start` names the part that cannot start, its cause and the fix in one line, before it starts anything.
import { freePort } from '@mileage/runtime/config';
import { testServerUrl } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { checkDataDir, checkPorts, checkPostmasterPid } from './preflight';

const scratch = mkdtempSync(path.join(tmpdir(), 'preflight-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

async function occupy(): Promise<{ port: number; server: Server }> {
  const port = await freePort();
  const server = createServer().listen(port, '127.0.0.1');
  await once(server, 'listening');
  return { port, server };
}

describe('npm start preflight', () => {
  it('names a port in use with the variable that moves it, and passes a free one', async () => {
    const { port, server } = await occupy();
    try {
      const free = await freePort();
      const problems = await checkPorts([
        { part: 'embedded PostgreSQL', port, variable: 'EMBEDDED_POSTGRES_PORT' },
        { part: 'gateway', port: free, variable: 'GATEWAY_PORT' },
      ]);
      assert.deepEqual(
        problems.map((p) => p.message),
        [
          `npm start: embedded PostgreSQL: port ${port} is already in use (another npm start, or another program). ` +
            'Fix: stop what uses it, or set EMBEDDED_POSTGRES_PORT to a free port',
        ],
      );
    } finally {
      server.close();
    }
  });

  it('refuses a data folder that is a file, and makes a missing one', () => {
    const file = path.join(scratch, 'a-file');
    writeFileSync(file, '');
    assert.match(
      checkDataDir(file)!.message,
      /^npm start: data folder .*a-file: it is not a folder\. Fix: set DATA_DIR/,
    );
    const fresh = path.join(scratch, 'new', 'nested');
    assert.equal(checkDataDir(fresh), undefined);
    assert.ok(existsSync(fresh));
  });

  it('removes a postmaster.pid whose process is not PostgreSQL, and keeps a live one', async () => {
    const stale = path.join(scratch, 'stale-pg');
    mkdirSync(stale);
    // This test's own pid: a live process that is not PostgreSQL, as after a restart that reused the pid.
    writeFileSync(path.join(stale, 'postmaster.pid'), `${process.pid}\n${stale}\n`);
    const logged: string[] = [];
    assert.equal(
      checkPostmasterPid(stale, (m) => logged.push(m)),
      undefined,
    );
    assert.equal(existsSync(path.join(stale, 'postmaster.pid')), false);
    assert.match(logged[0]!, /removed a stale .*postmaster\.pid \(pid \d+ is not PostgreSQL\)/);

    // The test run's real PostgreSQL holds its own data folder.
    const client = new pg.Client({ connectionString: testServerUrl() });
    await client.connect();
    const dataDir = (await client.query<{ data_directory: string }>('SHOW data_directory')).rows[0]!.data_directory;
    await client.end();
    const problem = checkPostmasterPid(dataDir, () => assert.fail('nothing to remove'));
    assert.match(problem!.message, /^npm start: embedded PostgreSQL: another PostgreSQL \(pid \d+\) is running on /);
    assert.ok(existsSync(path.join(dataDir, 'postmaster.pid')));
  });

  it('npm start exits 1 with one line per part that cannot start, having started nothing', async () => {
    const { port, server } = await occupy();
    try {
      const names = ['GATEWAY', 'DEV_IDP', 'USERS_GRPC', 'GROUPS_GRPC', 'DRIVES_GRPC', 'SCIM_GRPC', 'WEBHOOKS_GRPC'];
      const metrics = ['GATEWAY', 'USERS', 'GROUPS', 'DRIVES', 'SCIM', 'WEBHOOKS'].map((n) => `${n}_METRICS`);
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        LOG_LEVEL: 'silent',
        DATA_DIR: path.join(scratch, 'data'),
      };
      for (const name of [...names, ...metrics]) env[`${name}_PORT`] = String(await freePort());
      env.EMBEDDED_POSTGRES_PORT = String(port);
      env.GATEWAY_PORT = String(port);
      const child = spawn(process.execPath, [path.join(__dirname, 'main.js')], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c) => (stderr += c));
      const [code] = await once(child, 'exit');
      assert.equal(code, 1);
      assert.deepEqual(stderr.trim().split('\n'), [
        `npm start: embedded PostgreSQL: port ${port} is already in use (another npm start, or another program). ` +
          'Fix: stop what uses it, or set EMBEDDED_POSTGRES_PORT to a free port',
        `npm start: gateway: port ${port} is already in use (another npm start, or another program). ` +
          'Fix: stop what uses it, or set GATEWAY_PORT to a free port',
      ]);
      assert.equal(existsSync(path.join(scratch, 'data', 'postgres')), false, 'nothing was started');
    } finally {
      server.close();
    }
  });
});
