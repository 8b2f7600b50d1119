// The Users service as the chart runs it with every hardening on: migrations as the schema owner
// (MIGRATION_DATABASE_URL, here MIGRATE_ON_START) granting the runtime role (DATABASE_URL) its DML, and mutual TLS on
// its gRPC port with certificates made at test time. A plaintext caller is refused, a certificate without an identity
// keeps the process from starting, SCIM's certificate creates a user and its audit entry as the runtime role (which
// still cannot rewrite that entry) and the gateway's may not. HTTP probes answer on the metrics port.
import * as grpc from '@grpc/grpc-js';
import { scimAuditV1, usersV1 } from '@mileage/proto';
import { createGrpcClient, EndUserSigner, grpcTls, HealthClient, SCIM_AUDIENCE } from '@mileage/runtime/grpc';
import { freePort } from '@mileage/runtime/config';
import {
  createSchemaRoles,
  createTestDatabase,
  createTestPki,
  TEST_SPIFFE_PREFIX,
  waitFor,
} from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { user } from './users-suite.fixture';

test('owner migrates, runtime role serves, mutual TLS refuses plaintext', async (t) => {
  const testDb = await createTestDatabase('users_main');
  const { owner, runtime, urlOf, drop } = await createSchemaRoles(testDb, 'users', { rolePrefix: 'users_main' });
  const admin = new pg.Client({ connectionString: testDb.url });
  await admin.connect();

  const dir = mkdtempSync(path.join(tmpdir(), 'users-main-tls-'));
  const pki = createTestPki(dir);
  const tlsFiles = (name: string, component?: string) => {
    const { certFile, keyFile } = pki.issue(name, component && `${TEST_SPIFFE_PREFIX}${component}`);
    return {
      GRPC_TLS_CERT_FILE: certFile,
      GRPC_TLS_KEY_FILE: keyFile,
      GRPC_TLS_CA_FILE: pki.caFile,
      GRPC_TLS_SPIFFE_PREFIX: TEST_SPIFFE_PREFIX,
    };
  };
  const tlsEnv = tlsFiles('users', 'users');
  const [grpcPort, metricsPort] = [await freePort(), await freePort()];
  const env = {
    PATH: process.env.PATH,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
    DATABASE_URL: urlOf(runtime),
    MIGRATION_DATABASE_URL: urlOf(owner),
    MIGRATE_ON_START: 'true',
    GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
    METRICS_PORT: String(metricsPort),
  };

  // Half a TLS configuration: refused at start (exit 78), nothing listens.
  const partial = spawnSync(process.execPath, [path.join(__dirname, 'main.js')], {
    env: { ...env, GRPC_TLS_CERT_FILE: tlsEnv.GRPC_TLS_CERT_FILE },
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(partial.status, 78, partial.stderr);
  assert.match(partial.stderr, /GRPC_TLS_KEY_FILE: required when GRPC_TLS_CERT_FILE is set/);
  assert.doesNotMatch(partial.stderr, new RegExp(owner.password));
  const { MIGRATION_DATABASE_URL: _owner, ...withoutOwner } = env;
  const noOwner = spawnSync(process.execPath, [path.join(__dirname, 'main.js')], {
    env: withoutOwner,
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(noOwner.status, 78, noOwner.stderr);
  assert.match(noOwner.stderr, /MIGRATION_DATABASE_URL: required with MIGRATE_ON_START/);
  // A certificate of the CA without a SPIFFE id (issued before identities), or naming another component: no start.
  const anonymous = spawnSync(process.execPath, [path.join(__dirname, 'main.js')], {
    env: { ...env, ...tlsFiles('users-old') },
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(anonymous.status, 78, anonymous.stderr);
  assert.match(anonymous.stderr, /GRPC_TLS_CERT_FILE: carries no \(single\) SPIFFE id/);
  const swapped = spawnSync(process.execPath, [path.join(__dirname, 'main.js')], {
    env: { ...env, ...tlsFiles('users-swapped', 'groups') },
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(swapped.status, 1, swapped.stderr);
  assert.match(swapped.stderr, /names the component groups, but this process is users/);

  const child = spawn(process.execPath, [path.join(__dirname, 'main.js')], {
    env: { ...env, ...tlsEnv },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const mtls = grpcTls(tlsFiles('scim', 'scim'));
  const gateway = createGrpcClient(usersV1.UsersServiceClient, `127.0.0.1:${grpcPort}`, {
    defaultDeadlineMs: 5_000,
    credentials: grpcTls(tlsFiles('gateway', 'gateway')).channelCredentials(),
  });
  const health = new HealthClient(`127.0.0.1:${grpcPort}`, mtls.channelCredentials());
  const plaintextHealth = new HealthClient(`127.0.0.1:${grpcPort}`);
  const users = createGrpcClient(usersV1.UsersServiceClient, `127.0.0.1:${grpcPort}`, {
    defaultDeadlineMs: 5_000,
    credentials: mtls.channelCredentials(),
  });
  const plaintext = createGrpcClient(usersV1.UsersServiceClient, `127.0.0.1:${grpcPort}`, { defaultDeadlineMs: 5_000 });
  t.after(async () => {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(undefined)));
    for (const c of [health, plaintextHealth, users, plaintext, gateway]) c.close();
    await admin.query(`DROP SCHEMA users CASCADE`);
    await admin.end();
    await drop();
    rmSync(dir, { recursive: true, force: true });
  });

  await waitFor(() => health.check('', 500), { timeoutMs: 20_000, what: 'users serving over mutual TLS' });
  assert.equal(await plaintextHealth.check('', 1_000), false, 'a plaintext health check is refused');
  assert.equal(await health.check('mileage.users.v1.OrganizationsService', 1_000), true, 'one process, both services');
  const refused = await plaintext.getUser({ id: 'TlsMain001', includeDeleted: false }).then(
    () => assert.fail('a plaintext call was answered'),
    (err: grpc.ServiceError) => err.code,
  );
  assert.equal(refused, grpc.status.UNAVAILABLE);
  for (const probe of ['/healthz', '/readyz'])
    assert.equal((await fetch(`http://127.0.0.1:${metricsPort}${probe}`)).status, 200, probe);

  // The runtime role does the service's work: a user and its audit entry in one transaction, SCIM's method only.
  const request = {
    user: user({ id: 'TlsMain001', userName: 'tls-main@example.com' }),
    audit: {
      actor: 'okta-prod',
      operation: scimAuditV1.AuditOperation.AUDIT_OPERATION_CREATE,
      requestId: 'req-1',
    },
  };
  await assert.rejects(gateway.createUser(request, { organizationId: 1 }), { code: grpc.status.PERMISSION_DENIED });
  // SCIM's write acts for its provisioning client: only with the gateway's end-user context naming it as the actor.
  const gatewayFiles = tlsFiles('gateway-signer', 'gateway');
  const signer = new EndUserSigner(
    readFileSync(gatewayFiles.GRPC_TLS_CERT_FILE),
    readFileSync(gatewayFiles.GRPC_TLS_KEY_FILE),
  );
  const vouched = (client: string) => ({
    organizationId: 1,
    endUser: signer.sign({ client, org: 1, scopes: ['scim'], aud: [...SCIM_AUDIENCE] }),
  });
  const notVouched = { code: grpc.status.PERMISSION_DENIED, message: /END_USER|not vouched/ };
  await assert.rejects(users.createUser(request, { organizationId: 1 }), notVouched);
  await assert.rejects(users.createUser(request, vouched('entra-prod')), notVouched);
  const created = await users.createUser(request, vouched('okta-prod'));
  assert.equal(created.user?.id, 'TlsMain001');
  const { rows } = await admin.query<{ actor: string }>(
    `SELECT actor FROM users.provisioning_audit WHERE user_id = 'TlsMain001'`,
  );
  assert.deepEqual(rows, [{ actor: 'okta-prod' }]);
  // … and nothing more, on the connection the service itself uses.
  const asRuntime = new pg.Client({ connectionString: urlOf(runtime) });
  await asRuntime.connect();
  try {
    // The trail's DELETE meets its trigger (only an erasure of the declared organization passes: roles.test.ts).
    const deleteTrail = `DO $$ BEGIN PERFORM set_config('mileage.organization_id', '1', true);
      DELETE FROM users.provisioning_audit; END $$`;
    await assert.rejects(asRuntime.query(deleteTrail), { code: 'P0001' });
    await assert.rejects(asRuntime.query(`ALTER TABLE users.users ADD COLUMN evil text`), { code: '42501' });
  } finally {
    await asRuntime.end();
  }
});
