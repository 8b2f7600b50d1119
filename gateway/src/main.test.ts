import assert from 'node:assert/strict';
import { createTestPki, TEST_SPIFFE_PREFIX } from '@mileage/runtime/testing';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';

test('the gateway refuses to start on invalid configuration and says which variables are wrong', () => {
  const result = spawnSync(process.execPath, [path.join(__dirname, 'main.js')], {
    env: { PATH: process.env.PATH, PORT: 'eighty', OIDC_ALGORITHMS: 'HS256', REDIS_URL: 'http://secret@host' },
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(result.status, 78);
  assert.match(result.stderr, /PORT: /);
  assert.match(result.stderr, /OIDC_ALGORITHMS: only asymmetric JWS algorithms/);
  assert.match(result.stderr, /REDIS_URL: .*\(set \(hidden\)\)/);
  assert.doesNotMatch(result.stderr, /secret@host/);
});

test('the gateway needs the attestation secret, and mutual TLS all or nothing, with an identity', () => {
  const start = (env: Record<string, string>) =>
    spawnSync(process.execPath, [path.join(__dirname, 'main.js')], {
      env: { PATH: process.env.PATH, ...env },
      encoding: 'utf8',
      timeout: 20_000,
    });
  const without = start({});
  assert.equal(without.status, 78);
  assert.match(without.stderr, /ACTOR_ATTESTATION_SECRET: .*\(unset\)/);
  // No certificate and no development switch: mutual TLS is required, and the message names the switch.
  const untrusted = start({ ACTOR_ATTESTATION_SECRET: 'gateway-main-test-attestation-secret-0123' });
  assert.equal(untrusted.status, 78);
  assert.match(untrusted.stderr, /GRPC_TLS_CERT_FILE: required: the gRPC hop is mutual TLS .* GRPC_PLAINTEXT=true/);
  const both = start({
    ACTOR_ATTESTATION_SECRET: 'gateway-main-test-attestation-secret-0123',
    GRPC_PLAINTEXT: 'true',
    GRPC_TLS_CERT_FILE: '/nonexistent/tls.crt',
  });
  assert.equal(both.status, 78);
  assert.match(both.stderr, /GRPC_PLAINTEXT: contradicts the GRPC_TLS_\* files/);
  const partial = start({
    ACTOR_ATTESTATION_SECRET: 'gateway-main-test-attestation-secret-0123',
    GRPC_TLS_CERT_FILE: '/nonexistent/tls.crt',
  });
  assert.equal(partial.status, 78);
  assert.match(partial.stderr, /GRPC_TLS_KEY_FILE: required when GRPC_TLS_CERT_FILE is set/);
  assert.match(partial.stderr, /GRPC_TLS_CA_FILE: required when GRPC_TLS_CERT_FILE is set/);
  assert.doesNotMatch(partial.stderr, /gateway-main-test-attestation-secret/);
  // A certificate of the CA that names no component (one issued before identities): refused at start.
  const dir = mkdtempSync(path.join(tmpdir(), 'gateway-main-tls-'));
  try {
    const pki = createTestPki(dir);
    const old = pki.issue('gateway-old');
    const anonymous = start({
      ACTOR_ATTESTATION_SECRET: 'gateway-main-test-attestation-secret-0123',
      GRPC_TLS_CERT_FILE: old.certFile,
      GRPC_TLS_KEY_FILE: old.keyFile,
      GRPC_TLS_CA_FILE: pki.caFile,
      GRPC_TLS_SPIFFE_PREFIX: TEST_SPIFFE_PREFIX,
    });
    assert.equal(anonymous.status, 78, anonymous.stderr);
    assert.match(anonymous.stderr, /GRPC_TLS_CERT_FILE: carries no \(single\) SPIFFE id/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the gateway refuses a malformed SCIM client binding and a token cache beyond the documented bound', () => {
  const result = spawnSync(process.execPath, [path.join(__dirname, 'main.js')], {
    env: {
      PATH: process.env.PATH,
      ACTOR_ATTESTATION_SECRET: 'gateway-main-test-attestation-secret-0123',
      SCIM_CLIENT_ORGANIZATIONS: 'mileage-scim=demo,mileage-scim=globex',
      SCIM_TOKEN_CACHE_SECONDS: '31',
    },
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(result.status, 78);
  assert.match(result.stderr, /SCIM_CLIENT_ORGANIZATIONS: the client mileage-scim is bound twice/);
  assert.match(result.stderr, /SCIM_TOKEN_CACHE_SECONDS: /);
});

test('the previous cursor key is checked like the current one, and only beside one', () => {
  const start = (env: Record<string, string>) =>
    spawnSync(process.execPath, [path.join(__dirname, 'main.js')], {
      env: { PATH: process.env.PATH, ACTOR_ATTESTATION_SECRET: 'gateway-main-test-attestation-secret-0123', ...env },
      encoding: 'utf8',
      timeout: 20_000,
    });
  const short = start({ CURSOR_SECRET: 'gateway-main-test-cursor-secret-0123456789', CURSOR_SECRET_PREVIOUS: 'short' });
  assert.equal(short.status, 78);
  assert.match(short.stderr, /CURSOR_SECRET_PREVIOUS: at least 32 characters/);
  const alone = start({ CURSOR_SECRET_PREVIOUS: 'gateway-main-test-previous-cursor-secret-0123' });
  assert.equal(alone.status, 78);
  assert.match(alone.stderr, /CURSOR_SECRET_PREVIOUS: needs CURSOR_SECRET/);
  assert.doesNotMatch(alone.stderr, /gateway-main-test-previous-cursor-secret/);
});
