// End to end: `npm start`'s entry point on free ports with a fresh data folder, exactly as a user runs it.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { usersV1 } from '@mileage/proto';
import { createGrpcClient, grpcTls } from '@mileage/runtime/grpc';
import { freePort } from '@mileage/runtime/config';
import { waitFor } from '@mileage/runtime/testing';
import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { PORT_VARIABLES } from './launch';
import { passwordToken, scimClientToken } from './tokens';
import { developmentGrpcConfig } from './wiring';

const dataDir = mkdtempSync(path.join(tmpdir(), 'devstack-'));
chmodSync(dataDir, 0o755);
const started: ChildProcess[] = [];
after(() => {
  // A failed assertion must not leave a stack running: each stack is its own process group, killed whole.
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

async function ports() {
  const env: Record<string, string> = {};
  for (const n of PORT_VARIABLES) env[n] = String(await freePort());
  return env;
}

/** Starts the stack and resolves with its printed output once the banner appears. */
function startStack(env: Record<string, string>): Promise<{ child: ChildProcess; output: () => string }> {
  // The embedded defaults: no external database or Redis.
  const { DATABASE_URL: _db, REDIS_URL: _redis, ...inherited } = process.env;
  const child = spawn(process.execPath, [path.join(__dirname, 'main.js')], {
    env: { ...inherited, ...env, DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  started.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      // The banner and the seeding decision (a log line, written through another stream) may arrive in either order.
      if (out.includes('Ctrl-C stops everything.') && /"seeded":(true|false)/.test(out))
        resolve({ child, output: () => out });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => reject(new Error(`stack exited early (${code}):\n${out}`)));
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

describe('npm start', { timeout: 120_000 }, () => {
  test('serves /v1/users/me to a token from the printed command, seeds once, keeps data, stops cleanly', async () => {
    const env = await ports();
    const first = await startStack(env);
    const text = first.output();
    assert.match(text, /"msg":"demo data seeded"/);
    const issuer = `http://127.0.0.1:${env.DEV_IDP_PORT}/realms/mileage`;
    assert.ok(text.includes(`${issuer}/protocol/openid-connect/token`), 'the banner prints the token command');

    const access_token = await passwordToken(issuer, {
      username: 'alice@example.com',
      password: 'demo',
      scope: 'users_read groups_read groups_read_reported_drives drives_read',
    });
    const me = await fetch(`http://127.0.0.1:${env.GATEWAY_PORT}/v1/users/me`, {
      headers: { authorization: `Bearer ${access_token}` },
    });
    assert.equal(me.status, 200);
    const body = (await me.json()) as { id: string; userName: string };
    assert.equal(body.id, 'AliceAdm01');
    assert.equal(body.userName, 'alice@example.com');

    // The hop is mutual TLS with the stack's own CA: a plaintext caller gets no answer (UNAVAILABLE, 14: the
    // handshake fails), and the gateway's certificate is refused what the gateway may not call (PERMISSION_DENIED, 7).
    const usersAddress = `127.0.0.1:${env.USERS_GRPC_PORT}`;
    const plaintext = createGrpcClient(usersV1.OrganizationsServiceClient, usersAddress, { defaultDeadlineMs: 5_000 });
    const asGateway = createGrpcClient(usersV1.OrganizationsServiceClient, usersAddress, {
      defaultDeadlineMs: 5_000,
      credentials: grpcTls(developmentGrpcConfig(path.join(dataDir, 'grpc-pki'), 'gateway')).channelCredentials(),
    });
    try {
      await assert.rejects(plaintext.getOrganization({ key: { $case: 'alias', value: 'demo' } }), { code: 14 });
      await assert.rejects(asGateway.createOrganization({ alias: 'rogue', name: 'Rogue' }), { code: 7 });
      assert.equal(
        (await asGateway.getOrganization({ key: { $case: 'alias', value: 'demo' } })).organization?.alias,
        'demo',
      );
    } finally {
      plaintext.close();
      asGateway.close();
    }
    const groups = await fetch(`http://127.0.0.1:${env.GATEWAY_PORT}/v1/groups`, {
      headers: { authorization: `Bearer ${access_token}` },
    });
    assert.equal(groups.status, 200);
    const { resources } = (await groups.json()) as {
      resources: { id: string; display_name: string; members: { value: string }[] }[];
    };
    assert.deepEqual(
      resources.map((g) => [g.id, g.display_name]),
      [['1', 'Demo Team']],
    );
    assert.deepEqual(
      resources[0]!.members.map((m) => m.value),
      ['AliceAdm01', 'BobDriver1', 'CarolDrv01'],
    );
    const reported = await fetch(`http://127.0.0.1:${env.GATEWAY_PORT}/v1/groups/1/reported-drives?limit=1000`, {
      headers: { authorization: `Bearer ${access_token}` },
    });
    assert.equal(reported.status, 200);
    const { results } = (await reported.json()) as {
      results: { driver: { id: string }; review_comments: unknown[] }[];
    };
    assert.ok(
      results.filter((r) => r.driver.id === 'BobDriver1').length >= 25,
      'at least 25 of Bob’s drives reported to group 1',
    );
    assert.ok(results.filter((r) => r.driver.id === 'CarolDrv01').length >= 10, 'at least 10 of Carol’s');
    assert.ok(
      results.some((r) => r.review_comments.length > 0),
      'some with review comments',
    );
    // The demo data's deletions and withdrawals are tombstones in the change feed.
    const feed = await fetch(
      `http://127.0.0.1:${env.GATEWAY_PORT}/v1/groups/1/reported-drives?limit=1000&include_deleted=true`,
      { headers: { authorization: `Bearer ${access_token}` } },
    );
    assert.equal(feed.status, 200);
    const tombstones = ((await feed.json()) as { results: { deleted?: boolean }[] }).results.filter((r) => r.deleted);
    assert.equal(tombstones.length, 3, 'Bob: one deleted, one withdrawn; Carol: one withdrawn');
    const metrics = await (await fetch(`http://127.0.0.1:${env.GATEWAY_METRICS_PORT}/metrics`)).text();
    assert.match(metrics, /http_server_request_duration_seconds_count\{[^}]*route="users.me"/);

    // Webhooks (+): Alice subscribes a loopback receiver (allowed by npm start); an event committed in the Drives
    // service's outbox reaches it through the relay and the Webhooks service, signed.
    const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const hookToken = await passwordToken(issuer, {
      username: 'alice@example.com',
      password: 'demo',
      scope: 'webhooks_manage',
    });
    const hookAuth = { authorization: `Bearer ${hookToken}` };
    const hook = await fetch(`http://127.0.0.1:${env.GATEWAY_PORT}/v1/groups/1/webhooks`, {
      method: 'POST',
      headers: { ...hookAuth, 'content-type': 'application/json' },
      body: JSON.stringify({
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
        events: ['drive.reported'],
      }),
    });
    assert.equal(hook.status, 201);
    const { secret } = (await hook.json()) as { secret: string };
    const { postgresPassword } = JSON.parse(readFileSync(path.join(dataDir, 'secrets.json'), 'utf8')) as {
      postgresPassword: string;
    };
    const admin = new pg.Client({
      connectionString: `postgres://postgres:${encodeURIComponent(postgresPassword)}@127.0.0.1:${env.EMBEDDED_POSTGRES_PORT}/postgres`,
    });
    await admin.connect();
    const eventId = randomUUID();
    await admin.query(
      // Group 1 and Bob are Demo Org's (organization 1); the event names its organization as every event does.
      `INSERT INTO drives.outbox (id, event_type, group_id, user_id, payload, organization_id)
       VALUES ($1, 'drive.reported', 1, 'BobDriver1', '{"id": "1"}', 1)`,
      [eventId],
    );
    await admin.end();
    await waitFor(() => received.length > 0, { timeoutMs: 5_000, what: 'the webhook delivery' });
    receiver.close();
    assert.equal(received[0]!.headers['webhook-id'], eventId);
    const delivered = new Webhook(secret).verify(received[0]!.body, received[0]!.headers as Record<string, string>) as {
      type: string;
    };
    assert.equal(delivered.type, 'drive.reported');

    // Provisioning through the gateway to the SCIM service, with the development secret of CONTRACT §6.
    const scimToken = await scimClientToken(issuer, 'scim-dev-secret');
    const scimHeaders = { authorization: `Bearer ${scimToken}`, 'content-type': 'application/scim+json' };
    const bob = await fetch(
      `http://127.0.0.1:${env.GATEWAY_PORT}/scim/v2/Users?filter=${encodeURIComponent('userName eq "BOB@example.com"')}`,
      { headers: scimHeaders },
    );
    assert.equal(bob.status, 200);
    assert.deepEqual(
      ((await bob.json()) as { Resources: { id: string }[] }).Resources.map((r) => r.id),
      ['BobDriver1'],
    );
    const created = await fetch(`http://127.0.0.1:${env.GATEWAY_PORT}/scim/v2/Users`, {
      method: 'POST',
      headers: scimHeaders,
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: 'erin@example.com',
        name: { givenName: 'Erin', familyName: 'New' },
      }),
    });
    assert.equal(created.status, 201);
    const erin = (await created.json()) as { id: string };
    const joined = await fetch(`http://127.0.0.1:${env.GATEWAY_PORT}/scim/v2/Groups/2`, {
      method: 'PATCH',
      headers: scimHeaders,
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'add', path: 'members', value: [{ value: erin.id }] }],
      }),
    });
    assert.equal(joined.status, 200);
    assert.ok(((await joined.json()) as { members: { value: string }[] }).members.some((m) => m.value === erin.id));

    // Organizations (CONTRACT §7): Globex's provisioning client and its admin see Globex only.
    const globexScim = await scimClientToken(issuer, 'scim-globex-dev-secret', 'mileage-scim-globex');
    const scimIds = async (bearer: string, query = '') => {
      const res = await fetch(`http://127.0.0.1:${env.GATEWAY_PORT}/scim/v2/Users${query}`, {
        headers: { authorization: `Bearer ${bearer}` },
      });
      assert.equal(res.status, 200);
      return ((await res.json()) as { Resources: { id: string }[] }).Resources.map((r) => r.id).sort();
    };
    assert.deepEqual(await scimIds(globexScim), ['ErinAdmin1', 'FrankDrv01', 'GlobexBob1']);
    assert.deepEqual(
      await scimIds(globexScim, `?filter=${encodeURIComponent('userName eq "bob@example.com"')}`),
      ['GlobexBob1'],
      'the same userName in another organization',
    );
    const erinToken = await passwordToken(issuer, {
      username: 'erin@globex.example',
      password: 'demo',
      scope: 'groups_read groups_read_reported_drives organization_manage',
    });
    const asErin = (route: string, init: RequestInit = {}) =>
      fetch(`http://127.0.0.1:${env.GATEWAY_PORT}${route}`, {
        ...init,
        headers: { authorization: `Bearer ${erinToken}`, 'content-type': 'application/json' },
      });
    const erinGroups = (await (await asErin('/v1/groups')).json()) as { resources: { id: string }[] };
    assert.deepEqual(
      erinGroups.resources.map((g) => g.id),
      ['3'],
    );
    assert.equal((await asErin('/v1/groups/1')).status, 403, 'a group of another organization');
    const frankReports = (await (await asErin('/v1/groups/3/reported-drives?limit=1000')).json()) as {
      results: { driver: { id: string } }[];
    };
    assert.ok(frankReports.results.length > 0);
    assert.ok(frankReports.results.every((r) => r.driver.id === 'FrankDrv01'));
    // Erin, Globex's organization admin, mints a SCIM secret token: it acts for Globex.
    const minted = await asErin('/v1/organization/scim-tokens', { method: 'POST', body: '{"name": "stack test"}' });
    assert.equal(minted.status, 201);
    const { token: secretToken } = (await minted.json()) as { token: string };
    assert.match(secretToken, /^mscim_/);
    assert.deepEqual(await scimIds(secretToken), ['ErinAdmin1', 'FrankDrv01', 'GlobexBob1']);

    // The operator's command line: a new organization, and Frank made (then no longer) an organization admin.
    const org = (...args: string[]) =>
      execFileSync(process.execPath, [path.join(__dirname, 'org.js'), ...args], {
        // As the operator of the stack's development PKI in DATA_DIR, which the command finds by itself.
        env: {
          ...process.env,
          USERS_ADDRESS: `127.0.0.1:${env.USERS_GRPC_PORT}`,
          GROUPS_ADDRESS: `127.0.0.1:${env.GROUPS_GRPC_PORT}`,
          DRIVES_ADDRESS: `127.0.0.1:${env.DRIVES_GRPC_PORT}`,
          WEBHOOKS_ADDRESS: `127.0.0.1:${env.WEBHOOKS_GRPC_PORT}`,
          DATA_DIR: dataDir,
        },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    assert.match(org('create', 'initech', 'Initech'), /^organization 3 "Initech" \(alias initech\)/);
    assert.match(org('admin', 'FrankDrv01', 'on'), /FrankDrv01 .* of organization 2: organization admin/);
    assert.match(org('admin', 'FrankDrv01', 'off'), /not an organization admin/);
    // Offboarding (docs/operations.md, "Data lifecycle"): Globex suspended, its people refused (401) on the next
    // request; cancelled, everything as before.
    assert.match(org('offboard', 'globex', '--grace-days', '10'), /organization 2: suspended \(grace period\)/);
    assert.match(org('offboarding', 'globex'), /suspended/);
    assert.equal((await asErin('/v1/groups')).status, 401);
    assert.match(org('offboard', 'globex', '--cancel'), /offboarding cancelled/);
    assert.equal((await asErin('/v1/groups')).status, 200);
    // Initech erased at once, through every owner's gRPC port with the operator's certificate; the receipt stays.
    assert.match(org('offboard', 'initech', '--now'), /organization 3: erased[^]*users\.organizations\s+1/);
    assert.match(org('offboarding', '3'), /no backup holds it after/);
    assert.match(org('erase-due'), /no organization is due for erasure/);
    assert.throws(() => org('offboard', 'no-such-org'), /organization "no-such-org" not found/);
    assert.equal(await stop(first.child), 0);

    const second = await startStack(env);
    assert.match(second.output(), /database already holds data; not seeding/);
    assert.equal(await stop(second.child), 0);
  });
});
