// Mutual TLS between the gateway and the services, with certificates made at test time by the openssl CLI: a server
// with it on refuses plaintext, a TLS client without a certificate and one whose certificate another CA signed; a
// client with a certificate of the shared CA gets its answer. The configuration is all or nothing, checked at start.
import * as grpc from '@grpc/grpc-js';
import { PROTO_FILES, usersV1 } from '@mileage/proto';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { ConfigError, loadConfig } from './config';
import { createGrpcClient, HealthClient } from './grpc-client';
import { startGrpcServer, type GrpcServerHandle } from './grpc-server';
import { checkGrpcTls, grpcTls, grpcTlsConfigShape } from './grpc-tls';
import { createLogger } from './logger';
import { Metrics } from './metrics';
import { createTestPki, type TestPki } from './testing';
import { usersServiceStub, stubUser } from './users-stub.fixture';

const logger = createLogger({ service: 'grpc-tls-test', level: 'silent' });
let dir: string;
let pki: TestPki;
let server: GrpcServerHandle;
let calls = 0;
const tlsEnv = (files: { certFile: string; keyFile: string }, caFile: string) => ({
  GRPC_TLS_CERT_FILE: files.certFile,
  GRPC_TLS_KEY_FILE: files.keyFile,
  GRPC_TLS_CA_FILE: caFile,
});

const handlers = usersServiceStub({
  getUser: async (req) => {
    calls++;
    return {
      user: stubUser(req.id, 'tls@example.com'),
    };
  },
});

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'grpc-tls-'));
  pki = createTestPki(dir);
  const tls = grpcTls(tlsEnv(pki.issue('users'), pki.caFile));
  assert.equal(tls.enabled, true);
  server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [{ definition: usersV1.UsersServiceService, handlers: handlers as never }],
    protoFiles: [PROTO_FILES.users],
    logger,
    metrics: new Metrics('users'),
    credentials: tls.serverCredentials(),
  });
});

after(async () => {
  await server?.shutdown(1_000);
  rmSync(dir, { recursive: true, force: true });
});

/** GetUser with `credentials` to `host`: its gRPC status code (0 when it was answered) and whether it reached us. */
async function callWith(credentials: grpc.ChannelCredentials, host = '127.0.0.1') {
  const before = calls;
  const client = createGrpcClient(usersV1.UsersServiceClient, `${host}:${server.port}`, {
    defaultDeadlineMs: 5_000,
    credentials,
  });
  try {
    const answer = await client.getUser({ id: 'TlsUser001', includeDeleted: false });
    assert.equal(answer.user?.id, 'TlsUser001');
    return { code: grpc.status.OK, reached: calls > before };
  } catch (err) {
    return { code: (err as grpc.ServiceError).code, reached: calls > before };
  } finally {
    client.close();
  }
}

describe('mutual TLS on a service', () => {
  test('a client with a certificate of the shared CA is answered, by address and by host name', async () => {
    const gateway = grpcTls(tlsEnv(pki.issue('gateway'), pki.caFile));
    assert.deepEqual(await callWith(gateway.channelCredentials()), { code: grpc.status.OK, reached: true });
    assert.deepEqual(await callWith(gateway.channelCredentials(), 'localhost'), {
      code: grpc.status.OK,
      reached: true,
    });
    const health = new HealthClient(`127.0.0.1:${server.port}`, gateway.channelCredentials());
    try {
      assert.equal(await health.check('', 5_000), true);
    } finally {
      health.close();
    }
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
    const { readFileSync } = await import('node:fs');
    const anonymous = grpc.credentials.createSsl(readFileSync(pki.caFile));
    assert.deepEqual(await callWith(anonymous), { code: grpc.status.UNAVAILABLE, reached: false });
  });

  test('a client certificate signed by another CA is refused, and a client trusting another CA refuses the server', async () => {
    const otherDir = path.join(dir, 'other');
    mkdirSync(otherDir);
    const other = createTestPki(otherDir, 'other-ca');
    // Its own certificate from a foreign CA, though it trusts ours.
    const intruder = grpcTls(tlsEnv(other.issue('intruder'), pki.caFile));
    assert.deepEqual(await callWith(intruder.channelCredentials()), { code: grpc.status.UNAVAILABLE, reached: false });
    // A client of the other PKI does not accept our server's certificate.
    const misled = grpcTls(tlsEnv(other.issue('misled'), other.caFile));
    assert.deepEqual(await callWith(misled.channelCredentials()), { code: grpc.status.UNAVAILABLE, reached: false });
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

  test('none: plaintext; all three, readable and matching: on', () => {
    assert.deepEqual(problems({}), []);
    assert.equal(grpcTls({}).enabled, false);
    assert.deepEqual(problems(tlsEnv(pki.issue('complete'), pki.caFile)), []);
  });

  test('all or nothing, readable files, PEM, the key of the certificate', () => {
    const a = pki.issue('a');
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
