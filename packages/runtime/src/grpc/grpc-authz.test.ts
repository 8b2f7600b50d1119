// A SPIFFE id names a component only as the prefix plus its exact name (who may call what: grpc/method-rules.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CallerIdentities, componentOf, spiffeIdOf } from './grpc-authz';

const PREFIX = 'spiffe://cluster.local/ns/mileage/sa/mileage-';

test('a SPIFFE id names a component as the prefix followed by exactly its name', () => {
  assert.equal(componentOf(`${PREFIX}gateway`, PREFIX), 'gateway');
  assert.equal(componentOf(`${PREFIX}scim`, PREFIX), 'scim');
  for (const id of [
    `${PREFIX}gateway-canary`,
    `${PREFIX}Gateway`,
    `${PREFIX}`,
    'spiffe://cluster.local/ns/other/sa/mileage-gateway',
    'spiffe://evil.example/ns/mileage/sa/mileage-gateway',
    undefined,
  ])
    assert.equal(componentOf(id, PREFIX), undefined, String(id));
});

test("a certificate's SPIFFE id: its one spiffe:// URI SAN, none with zero or two", () => {
  assert.equal(spiffeIdOf(`IP Address:127.0.0.1, DNS:localhost, URI:${PREFIX}users`), `${PREFIX}users`);
  assert.equal(spiffeIdOf('IP Address:127.0.0.1, DNS:localhost'), undefined);
  assert.equal(spiffeIdOf('URI:https://example.com/x'), undefined);
  assert.equal(spiffeIdOf(`URI:${PREFIX}users, URI:${PREFIX}gateway`), undefined);
  assert.equal(spiffeIdOf(undefined), undefined);
});

test('the caller of a call: from its verified peer certificate, unknown without one', () => {
  const identities = new CallerIdentities(PREFIX);
  const call = (subjectaltname?: string) => ({
    getAuthContext: () => (subjectaltname ? { sslPeerCertificate: { subjectaltname } as never } : {}),
  });
  assert.deepEqual(identities.of(call(`DNS:localhost, URI:${PREFIX}drives`)), {
    spiffeId: `${PREFIX}drives`,
    component: 'drives',
  });
  // The same certificate again: the same answer (from the cache).
  assert.equal(identities.of(call(`DNS:localhost, URI:${PREFIX}drives`)).component, 'drives');
  assert.deepEqual(identities.of(call('DNS:localhost')), { spiffeId: undefined, component: 'unknown' });
  assert.deepEqual(identities.of(call()), { spiffeId: undefined, component: 'unknown' });
});
