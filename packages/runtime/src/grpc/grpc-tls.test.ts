// Mutual TLS between the gateway and the services, with certificates made at test time by the openssl CLI: a server
// with it on refuses plaintext, a TLS client without a certificate and one whose certificate another CA signed; a
// client with a certificate of the shared CA gets its answer when its SPIFFE id names a component that may call the
// method (its .proto's callers), PERMISSION_DENIED otherwise (counted and logged). The configuration is all or nothing, and
// a process's own certificate must name a component, checked at start.
import * as grpc from '@grpc/grpc-js';
import { PROTO_FILES, usersV1 } from '@mileage/proto';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { ConfigError, loadConfig } from '../config/config';
import { decodeServiceError } from './errors';
import { EndUserSigner, type EndUser } from './end-user';
import { createGrpcClient, HealthClient, type CallSettings } from './grpc-client';
import { startGrpcServer, type GrpcServerHandle } from './grpc-server';
import { CallerIdentities, COMPONENTS, sessionOf, type Component } from './grpc-authz';
import { checkGrpcTls, grpcTls, grpcTlsConfigShape, PLAINTEXT_WARNING, reportGrpcTls } from './grpc-tls';
import { createLogger } from '../telemetry/logger';
import { Metrics } from '../telemetry/metrics';
import { createTestPki, TEST_SPIFFE_PREFIX, type TestPki } from '../testing';
import { usersServiceStub, stubUser } from './users-stub.fixture';

/** The server's warnings, one parsed JSON object per line. */
const logLines: Record<string, unknown>[] = [];
const logger = createLogger({
  service: 'grpc-tls-test',
  level: 'warn',
  destination: { write: (line: string) => logLines.push(JSON.parse(line) as Record<string, unknown>) },
});
const metrics = new Metrics('users');
let dir: string;
let pki: TestPki;
let server: GrpcServerHandle;
let calls = 0;
/** The configuration of a process whose certificate is `files`, trusting `caFile`. */
const tlsEnv = (files: { certFile: string; keyFile: string }, caFile: string) => ({
  GRPC_TLS_CERT_FILE: files.certFile,
  GRPC_TLS_KEY_FILE: files.keyFile,
  GRPC_TLS_CA_FILE: caFile,
  GRPC_TLS_SPIFFE_PREFIX: TEST_SPIFFE_PREFIX,
});
/** A certificate of the test CA whose SPIFFE id names `component`. */
const issueFor = (component: string) => pki.issue(component, `${TEST_SPIFFE_PREFIX}${component}`);
/** Client credentials from certificate files as they are, whatever identity they carry (grpcTls checks it). */
const clientCredentials = (files: { certFile: string; keyFile: string }) =>
  grpc.credentials.createSsl(readFileSync(pki.caFile), readFileSync(files.keyFile), readFileSync(files.certFile));

const handlers = usersServiceStub({
  getUser: async (req) => {
    calls++;
    return {
      user: stubUser(req.id, 'tls@example.com'),
    };
  },
  batchGetUsers: async (req) => {
    calls++;
    return { users: req.ids.map((id) => stubUser(id)) };
  },
});

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'grpc-tls-'));
  pki = createTestPki(dir);
  const tls = grpcTls(tlsEnv(issueFor('users'), pki.caFile));
  assert.equal(tls.enabled, true);
  assert.equal(tls.identity, 'users');
  server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [{ definition: usersV1.UsersServiceService, handlers: handlers as never }],
    protoFiles: [PROTO_FILES.users],
    logger,
    metrics,
    tls,
  });
});

after(async () => {
  await server?.shutdown(1_000);
  rmSync(dir, { recursive: true, force: true });
});

/**
 * GetUser (or BatchGetUsers) with `credentials` to `host`: its gRPC status code (0 when it was answered), whether it
 * reached the handler, and the ErrorInfo reason of a refusal.
 */
async function callWith(
  credentials: grpc.ChannelCredentials,
  {
    host = '127.0.0.1',
    method = 'getUser',
    settings,
  }: { host?: string; method?: 'getUser' | 'batchGetUsers'; settings?: CallSettings } = {},
) {
  const before = calls;
  const client = createGrpcClient(usersV1.UsersServiceClient, `${host}:${server.port}`, {
    defaultDeadlineMs: 5_000,
    credentials,
  });
  try {
    const answer =
      method === 'getUser'
        ? (await client.getUser({ id: 'TlsUser001', includeDeleted: false }, settings)).user
        : (await client.batchGetUsers({ ids: ['TlsUser001'] }, settings)).users[0];
    assert.equal(answer?.id, 'TlsUser001');
    return { code: grpc.status.OK, reached: calls > before };
  } catch (err) {
    const { code, reason } = decodeServiceError(err as grpc.ServiceError);
    return { code, reached: calls > before, ...(reason && { reason }) };
  } finally {
    client.close();
  }
}

const provisioning = { client: 'okta-prod', org: 1, scopes: ['scim'], aud: ['scim', 'users', 'groups'] as Component[] };

/** Call settings of organization 1 with the gateway's end-user context of `user`. */
function vouched(user: Omit<EndUser, 'iat' | 'exp'> = provisioning): CallSettings {
  const gateway = issueFor('gateway');
  const signer = new EndUserSigner(readFileSync(gateway.certFile), readFileSync(gateway.keyFile));
  return { organizationId: 1, endUser: signer.sign(user) };
}

/** grpc_server_calls_denied_total of UsersService's method for that caller. */
async function denials(labels: { grpc_method: string; caller: string }): Promise<number> {
  const { values } = await metrics.grpcServerCallsDenied.get();
  return (
    values.find((v) => v.labels.grpc_method === labels.grpc_method && v.labels.caller === labels.caller)?.value ?? 0
  );
}

describe('mutual TLS on a service', () => {
  test('a client with a certificate of the shared CA is answered, by address and by host name', async () => {
    const scim = grpcTls(tlsEnv(issueFor('scim'), pki.caFile));
    const settings = vouched();
    assert.deepEqual(await callWith(scim.channelCredentials(), { settings }), { code: grpc.status.OK, reached: true });
    assert.deepEqual(await callWith(scim.channelCredentials(), { host: 'localhost', settings }), {
      code: grpc.status.OK,
      reached: true,
    });
  });

  test("SCIM's reads for a provisioning client need the gateway's end-user context of the call's organization", async () => {
    const scim = grpcTls(tlsEnv(issueFor('scim'), pki.caFile)).channelCredentials();
    const refused = { code: grpc.status.PERMISSION_DENIED, reached: false, reason: 'END_USER_NOT_VOUCHED' };
    assert.deepEqual(await callWith(scim, { settings: { organizationId: 1 } }), refused, 'none');
    assert.deepEqual(await callWith(scim, { settings: { ...vouched(), organizationId: 2 } }), refused, 'another org');
    // Signed by SCIM's own key (a certificate of the CA, but not the gateway's): a forgery.
    const own = issueFor('scim');
    const forged = new EndUserSigner(readFileSync(own.certFile), readFileSync(own.keyFile)).sign(provisioning);
    assert.deepEqual(await callWith(scim, { settings: { organizationId: 1, endUser: forged } }), refused, 'forged');
    const forDrives = vouched({ ...provisioning, aud: ['drives'] });
    assert.deepEqual(await callWith(scim, { settings: forDrives }), refused, 'for another audience');
    assert.deepEqual(await callWith(scim, { settings: vouched() }), { code: grpc.status.OK, reached: true });
  });

  test("the gateway's certificate calls what the gateway may call, is denied the rest, and health is open", async () => {
    const gateway = grpcTls(tlsEnv(issueFor('gateway'), pki.caFile));
    assert.equal(gateway.identity, 'gateway');
    assert.deepEqual(await callWith(gateway.channelCredentials(), { method: 'batchGetUsers' }), {
      code: grpc.status.OK,
      reached: true,
    });
    const deniedBefore = await denials({ grpc_method: 'GetUser', caller: 'gateway' });
    const logged = logLines.length;
    assert.deepEqual(await callWith(gateway.channelCredentials()), {
      code: grpc.status.PERMISSION_DENIED,
      reached: false,
      reason: 'CALLER_NOT_ALLOWED',
    });
    assert.equal(await denials({ grpc_method: 'GetUser', caller: 'gateway' }), deniedBefore + 1);
    assert.deepEqual(
      logLines.slice(logged).map(({ level, caller, grpc_method, request_id }) => ({
        level,
        caller,
        grpc_method,
        has_request_id: typeof request_id === 'string',
      })),
      [
        {
          level: 'warn',
          caller: `${TEST_SPIFFE_PREFIX}gateway`,
          grpc_method: '/mileage.users.v1.UsersService/GetUser',
          has_request_id: true,
        },
      ],
    );
    const health = new HealthClient(`127.0.0.1:${server.port}`, gateway.channelCredentials());
    try {
      assert.equal(await health.check('', 5_000), true);
    } finally {
      health.close();
    }
  });

  test('a certificate of the CA without a SPIFFE id, or with one outside the prefix, is denied every method', async () => {
    const before = await denials({ grpc_method: 'GetUser', caller: 'unknown' });
    for (const files of [
      pki.issue('anonymous'),
      pki.issue('foreign-domain', 'spiffe://elsewhere.example/ns/mileage/sa/mileage-scim'),
      pki.issue('not-a-component', `${TEST_SPIFFE_PREFIX}scim-v2`),
    ]) {
      assert.deepEqual(await callWith(clientCredentials(files)), {
        code: grpc.status.PERMISSION_DENIED,
        reached: false,
        reason: 'CALLER_NOT_ALLOWED',
      });
    }
    assert.equal(await denials({ grpc_method: 'GetUser', caller: 'unknown' }), before + 3);
  });

  test('a plaintext client is refused', async () => {
    assert.deepEqual(await callWith(grpc.credentials.createInsecure()), {
      code: grpc.status.UNAVAILABLE,
      reached: false,
    });
    const health = new HealthClient(`127.0.0.1:${server.port}`);
    try {
      assert.equal(await health.check('', 2_000), false);
    } finally {
      health.close();
    }
  });

  test('a TLS client without a certificate is refused', async () => {
    const anonymous = grpc.credentials.createSsl(readFileSync(pki.caFile));
    assert.deepEqual(await callWith(anonymous), { code: grpc.status.UNAVAILABLE, reached: false });
  });

  test('a client certificate signed by another CA is refused, and a client trusting another CA refuses the server', async () => {
    const otherDir = path.join(dir, 'other');
    mkdirSync(otherDir);
    const other = createTestPki(otherDir, 'other-ca');
    // Its own certificate from a foreign CA, though it trusts ours.
    const intruder = grpcTls(tlsEnv(other.issue('intruder', `${TEST_SPIFFE_PREFIX}gateway`), pki.caFile));
    assert.deepEqual(await callWith(intruder.channelCredentials()), { code: grpc.status.UNAVAILABLE, reached: false });
    // A client of the other PKI does not accept our server's certificate.
    const misled = grpcTls(tlsEnv(other.issue('misled', `${TEST_SPIFFE_PREFIX}scim`), other.caFile));
    assert.deepEqual(await callWith(misled.channelCredentials()), { code: grpc.status.UNAVAILABLE, reached: false });
  });
});

describe("a connection's caller", () => {
  test('is read from its peer certificate once per connection (grpc-js builds it anew on every call)', async () => {
    const identities = new CallerIdentities(TEST_SPIFFE_PREFIX);
    const seen: { session: object | undefined; component: string }[] = [];
    let certificateReads = 0;
    const raw = new grpc.Server();
    raw.addService(usersV1.UsersServiceService, {
      getUser: (call: grpc.ServerUnaryCall<usersV1.GetUserRequest, usersV1.GetUserResponse>, callback: never) => {
        // The call as the handler has it, its certificate reads counted.
        const counted = Object.assign(Object.create(call) as typeof call, {
          getAuthContext: () => (certificateReads++, call.getAuthContext()),
        });
        seen.push({ session: sessionOf(call), component: identities.of(counted).component });
        (callback as grpc.sendUnaryData<usersV1.GetUserResponse>)(null, { user: stubUser(call.request.id) });
      },
    } as never);
    const serverTls = grpcTls(tlsEnv(issueFor('users'), pki.caFile));
    const port = await new Promise<number>((resolve, reject) =>
      raw.bindAsync('127.0.0.1:0', serverTls.serverCredentials(), (err, bound) => (err ? reject(err) : resolve(bound))),
    );
    const clientOf = (component: string) =>
      createGrpcClient(usersV1.UsersServiceClient, `127.0.0.1:${port}`, {
        defaultDeadlineMs: 5_000,
        credentials: clientCredentials(issueFor(component)),
      });
    const scim = clientOf('scim');
    const gateway = clientOf('gateway');
    try {
      for (let i = 0; i < 3; i++) await scim.getUser({ id: 'TlsUser001', includeDeleted: false });
      await gateway.getUser({ id: 'TlsUser001', includeDeleted: false });
    } finally {
      scim.close();
      gateway.close();
      raw.forceShutdown();
    }
    assert.deepEqual(
      seen.map((s) => s.component),
      ['scim', 'scim', 'scim', 'gateway'],
    );
    // grpc-js's internals still lead to the connection (else every call would read the certificate again).
    assert.ok(seen.every((s) => s.session !== undefined));
    assert.equal(new Set(seen.map((s) => s.session)).size, 2, 'one session per connection');
    assert.equal(certificateReads, 2, 'one certificate read per connection');
  });
});

describe('mutual TLS configuration', () => {
  const schema = z.object(grpcTlsConfigShape).superRefine(checkGrpcTls);
  const problems = (env: Record<string, string>) => {
    try {
      loadConfig(schema, env);
      return [];
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      return err.problems;
    }
  };

  test('all three, readable and matching, with a prefix under which the certificate names a component: on', () => {
    assert.deepEqual(problems(tlsEnv(issueFor('drives'), pki.caFile)), []);
    assert.equal(grpcTls(tlsEnv(issueFor('drives'), pki.caFile)).enabled, true);
  });

  test('none: refused, unless the development switch says plaintext, which contradicts certificates', () => {
    assert.deepEqual(problems({}), [
      'GRPC_TLS_CERT_FILE: required: the gRPC hop is mutual TLS (GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE, ' +
        'GRPC_TLS_CA_FILE and GRPC_TLS_SPIFFE_PREFIX); for development only, GRPC_PLAINTEXT=true runs it in plaintext (unset)',
    ]);
    assert.deepEqual(problems({ GRPC_PLAINTEXT: 'false' }).length, 1);
    assert.deepEqual(problems({ GRPC_PLAINTEXT: 'true' }), []);
    assert.equal(grpcTls({ GRPC_PLAINTEXT: true }).enabled, false);
    assert.match(
      problems({ ...tlsEnv(issueFor('drives'), pki.caFile), GRPC_PLAINTEXT: 'true' }).join(),
      /GRPC_PLAINTEXT: contradicts the GRPC_TLS_\* files/,
    );
  });

  test('a plaintext process says so at start (an error line) and in grpc_mutual_tls_enabled', () => {
    const said: string[] = [];
    const gauge: number[] = [];
    const metrics = { gauge: () => ({ set: (v: number) => void gauge.push(v) }) };
    reportGrpcTls(grpcTls({ GRPC_PLAINTEXT: true }), { error: (m) => void said.push(m) }, metrics);
    assert.deepEqual(gauge, [0]);
    assert.deepEqual(said, [PLAINTEXT_WARNING]);
    assert.match(PLAINTEXT_WARNING, /PLAINTEXT .* any process that reaches a port may call any method/);
    reportGrpcTls(grpcTls(tlsEnv(issueFor('users'), pki.caFile)), { error: (m) => void said.push(m) }, metrics);
    assert.deepEqual(gauge, [0, 1]);
    assert.equal(said.length, 1, 'mutual TLS: nothing to say');
  });

  test('a certificate without an identity, or one the prefix does not map to a component, and no prefix: refused', () => {
    assert.deepEqual(problems(tlsEnv(pki.issue('old'), pki.caFile)), [
      'GRPC_TLS_CERT_FILE: carries no (single) SPIFFE id in its URI SANs, not GRPC_TLS_SPIFFE_PREFIX followed by a ' +
        `component (${COMPONENTS.join(', ')}) (${JSON.stringify(path.join(dir, 'old.crt'))})`,
    ]);
    assert.match(
      problems(tlsEnv(pki.issue('suffix', 'spiffe://cluster.local/ns/other/sa/mileage-gateway'), pki.caFile)).join(),
      /GRPC_TLS_CERT_FILE: carries the SPIFFE id spiffe:\/\/cluster.local\/ns\/other\/sa\/mileage-gateway, not/,
    );
    const { GRPC_TLS_SPIFFE_PREFIX: _prefix, ...withoutPrefix } = tlsEnv(issueFor('groups'), pki.caFile);
    assert.match(problems(withoutPrefix).join(), /GRPC_TLS_SPIFFE_PREFIX: required with mutual TLS/);
    assert.match(
      problems({ ...withoutPrefix, GRPC_TLS_SPIFFE_PREFIX: 'https://cluster.local/' }).join(),
      /GRPC_TLS_SPIFFE_PREFIX: expected spiffe:\/\//,
    );
    assert.throws(() => grpcTls(tlsEnv(pki.issue('old-again'), pki.caFile)), /carries no \(single\) SPIFFE id/);
  });

  test('all or nothing, readable files, PEM, the key of the certificate', () => {
    const a = issueFor('webhooks');
    const b = pki.issue('b');
    const partial = problems({ GRPC_TLS_CERT_FILE: a.certFile });
    assert.equal(partial.length, 2);
    assert.match(partial.join('\n'), /GRPC_TLS_KEY_FILE: required when GRPC_TLS_CERT_FILE is set/);
    assert.match(partial.join('\n'), /GRPC_TLS_CA_FILE: required/);
    assert.match(
      problems({ ...tlsEnv(a, pki.caFile), GRPC_TLS_CA_FILE: path.join(dir, 'missing.crt') }).join('\n'),
      /GRPC_TLS_CA_FILE: cannot be read \(ENOENT\)/,
    );
    assert.match(
      problems({ ...tlsEnv(a, pki.caFile), GRPC_TLS_KEY_FILE: b.keyFile }).join('\n'),
      /GRPC_TLS_KEY_FILE: is not the key of the certificate/,
    );
    assert.match(
      problems({ ...tlsEnv(a, pki.caFile), GRPC_TLS_CERT_FILE: a.keyFile }).join('\n'),
      /GRPC_TLS_CERT_FILE: is no PEM certificate/,
    );
    assert.throws(() => grpcTls({ GRPC_TLS_CERT_FILE: a.certFile }), /mutual TLS is all or nothing/);
  });
});
