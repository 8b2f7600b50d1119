// The one wiring of a stack: who is told which address, database and secret, for one replica and for two.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COMPONENTS } from '@mileage/runtime/grpc';
import { DATABASE_SERVICES, DEVELOPMENT_SPIFFE_PREFIX, wireStack, withDatabase, type StackPlan } from './wiring';

const plan = (overrides: Partial<StackPlan> = {}): StackPlan => ({
  services: ['users', 'groups', 'drives', 'scim', 'webhooks'],
  hosts: ['127.0.0.1'],
  grpcPorts: { users: 1001, groups: 1002, drives: 1003, scim: 1004, webhooks: 1005 },
  metricsPorts: { gateway: [2000], users: [2001], groups: [2002], drives: [2003], scim: [2004], webhooks: [2005] },
  gatewayPort: 8080,
  identity: { port: 8081, dataDir: '/data/idp', scimClientSecret: 'scim-secret' },
  databaseUrls: { users: 'postgres://u', groups: 'postgres://g', drives: 'postgres://d', webhooks: 'postgres://w' },
  secrets: { cursor: 'c', actorAttestation: 'a', webhooksKey: 'k' },
  grpc: { plaintext: true },
  ...overrides,
});

describe('wireStack', () => {
  it('gives each process the addresses of the services it calls, and its own database only', () => {
    const w = wireStack(plan());
    const scim = w.services.scim![0]!;
    assert.equal(scim.USERS_ADDRESS, '127.0.0.1:1001');
    assert.equal(scim.GROUPS_ADDRESS, '127.0.0.1:1002');
    assert.equal(scim.DRIVES_ADDRESS, undefined);
    assert.equal(scim.DATABASE_URL, undefined, 'no URL given: no DATABASE_URL');
    assert.equal(scim.SCIM_BASE_URL, 'http://127.0.0.1:8080/scim/v2');
    assert.equal(scim.ACTOR_ATTESTATION_SECRET, 'a');
    assert.equal(w.services.users![0]!.WEBHOOKS_ADDRESS, '127.0.0.1:1005');
    assert.equal(w.services.users![0]!.DATABASE_URL, 'postgres://u');
    assert.equal(w.services.webhooks![0]!.GROUPS_ADDRESS, '127.0.0.1:1002');
    assert.equal(w.services.drives![0]!.GROUPS_ADDRESS, '127.0.0.1:1002', 'a report names a group of the organization');
    assert.equal(w.services.drives![0]!.WEBHOOKS_ADDRESS, '127.0.0.1:1005');
    assert.equal(w.services.webhooks![0]!.WEBHOOKS_SECRET_KEY, 'k');
    assert.equal(w.services.groups![0]!.METRICS_PORT, '2002');
    const gateway = w.gateways[0]!;
    assert.deepEqual(
      Object.keys(gateway).filter((k) => k.endsWith('_ADDRESS')),
      ['USERS_ADDRESS', 'GROUPS_ADDRESS', 'DRIVES_ADDRESS', 'SCIM_ADDRESS', 'WEBHOOKS_ADDRESS'],
    );
    assert.equal(gateway.HOST, undefined, 'one gateway keeps its default address');
    assert.equal(gateway.OIDC_ISSUER, 'http://127.0.0.1:8081/realms/mileage');
    assert.equal(gateway.SCIM_CLIENT_ORGANIZATIONS, 'mileage-scim=demo', 'the claimless client is bound to Demo Org');
    assert.equal(w.idp!.DEV_IDP_PORT, '8081');
    assert.equal(w.gatewayUrl(), 'http://127.0.0.1:8080');
  });

  it('wires only the services that run', () => {
    const w = wireStack(plan({ services: ['users', 'groups', 'drives', 'scim'] }));
    assert.equal(w.services.webhooks, undefined);
    assert.equal(w.services.users![0]!.WEBHOOKS_ADDRESS, undefined);
    assert.equal(w.gateways[0]!.WEBHOOKS_ADDRESS, undefined);
  });

  it('spreads two replicas over two loopback addresses on shared ports, reached round-robin', () => {
    const w = wireStack(
      plan({
        services: ['users', 'groups', 'drives', 'scim'],
        hosts: ['127.0.0.1', '127.0.0.2'],
        metricsPorts: {
          gateway: [3000, 3001],
          users: [3002, 3003],
          groups: [3004, 3005],
          drives: [3006, 3007],
          scim: [3008, 3009],
        },
        redisUrl: 'redis://127.0.0.1:6379',
        extra: { services: { DATABASE_POOL_MAX: '4' }, gateway: { RATE_LIMIT_MULTIPLIER: '10' } },
      }),
    );
    const [a, b] = w.services.users!;
    assert.equal(a!.GRPC_ADDRESS, '127.0.0.1:1001');
    assert.equal(b!.GRPC_ADDRESS, '127.0.0.2:1001');
    assert.equal(b!.METRICS_PORT, '3003');
    assert.equal(b!.DATABASE_POOL_MAX, '4');
    assert.equal(w.gateways[1]!.HOST, '127.0.0.2');
    assert.equal(w.gateways[1]!.USERS_ADDRESS, 'ipv4:127.0.0.1:1001,127.0.0.2:1001');
    assert.equal(w.gateways[1]!.REDIS_URL, 'redis://127.0.0.1:6379');
    assert.equal(w.gateways[1]!.RATE_LIMIT_MULTIPLIER, '10');
    assert.equal(w.gatewayUrl(1), 'http://127.0.0.2:8080');
    assert.throws(() => wireStack(plan({ hosts: ['127.0.0.1', '127.0.0.2'] })), /no metrics port for users replica 1/);
  });

  it("gives every process its own component's certificate of the development PKI, or the plaintext switch", () => {
    const files = (c: string) => ({ certFile: `/pki/${c}.crt`, keyFile: `/pki/${c}.key`, caFile: '/pki/ca.crt' });
    const pki = {
      dir: '/pki',
      caFile: '/pki/ca.crt',
      spiffePrefix: DEVELOPMENT_SPIFFE_PREFIX,
      files: Object.fromEntries(COMPONENTS.map((c) => [c, files(c)])),
    };
    const w = wireStack(plan({ grpc: { pki } }));
    for (const s of ['users', 'groups', 'drives', 'scim', 'webhooks'] as const)
      assert.deepEqual(
        [
          w.services[s]![0]!.GRPC_TLS_CERT_FILE,
          w.services[s]![0]!.GRPC_TLS_KEY_FILE,
          w.services[s]![0]!.GRPC_PLAINTEXT,
        ],
        [`/pki/${s}.crt`, `/pki/${s}.key`, undefined],
      );
    assert.equal(w.gateways[0]!.GRPC_TLS_CERT_FILE, '/pki/gateway.crt');
    assert.equal(w.gateways[0]!.GRPC_TLS_CA_FILE, '/pki/ca.crt');
    assert.equal(w.gateways[0]!.GRPC_TLS_SPIFFE_PREFIX, DEVELOPMENT_SPIFFE_PREFIX);
    assert.equal(w.grpcConfig('seed').GRPC_TLS_CERT_FILE, '/pki/seed.crt');
    const plaintext = wireStack(plan());
    assert.equal(plaintext.gateways[0]!.GRPC_PLAINTEXT, 'true');
    assert.equal(plaintext.services.users![0]!.GRPC_TLS_CERT_FILE, undefined);
    assert.deepEqual(plaintext.grpcConfig('seed'), { GRPC_PLAINTEXT: true });
  });

  it('runs no development provider when a real issuer is given', () => {
    const w = wireStack(plan({ identity: { issuer: 'https://idp.example/realms/mileage/' } }));
    assert.equal(w.idp, undefined);
    assert.equal(w.gateways[0]!.OIDC_ISSUER, 'https://idp.example/realms/mileage');
  });

  it('lets the Webhooks service deliver to public https targets only, as installed, when asked', () => {
    const webhooks = wireStack(plan({ webhookTargets: 'public' })).services.webhooks![0]!;
    assert.equal(webhooks.WEBHOOKS_MODE, 'production');
    assert.equal(webhooks.WEBHOOKS_ALLOW_PRIVATE_TARGETS, '');
    assert.equal(webhooks.WEBHOOKS_TARGET_PORTS, undefined, 'the installed default ports');
    assert.equal(wireStack(plan()).services.webhooks![0]!.WEBHOOKS_ALLOW_PRIVATE_TARGETS, 'loopback');
  });

  it('refuses a stack with the Webhooks service but no key for its secrets', () => {
    assert.throws(() => wireStack(plan({ secrets: { cursor: 'c', actorAttestation: 'a' } })), /webhooksKey/);
  });

  it('lists the services with a database in migration order (the owners of the data after their donors)', () => {
    assert.deepEqual(withDatabase(['drives', 'users']), ['users', 'drives']);
    assert.deepEqual(withDatabase(['webhooks', 'drives', 'groups', 'users']), [
      'users',
      'groups',
      'drives',
      'webhooks',
    ]);
    assert.ok(DATABASE_SERVICES.includes('users'));
  });
});
