import { status, type ServiceError } from '@grpc/grpc-js';
import { filterV1, groupsV1, PROTO_FILES, webhooksV1 } from '@mileage/proto';
import {
  createGrpcClient,
  decodeServiceError,
  errors,
  startGrpcServer,
  type CallSettings,
  type GrpcServerHandle,
  type Handlers,
  type PromiseClient,
  type ServiceRegistration,
  requireOrganization,
} from '@mileage/runtime/grpc';
import { createLogger, Metrics, type Logger } from '@mileage/runtime/telemetry';
import {
  createOutboxTable,
  OutboxRelay,
  outboxOrganizationContractStatements,
  outboxOrganizationExpandStatements,
  recordEvent,
  toWebhookEvent,
} from '@mileage/runtime/outbox';
import { dateToTimestamp } from '@mileage/runtime/formats';
import { inOrganization, type Knex } from '@mileage/runtime/database';
import { runEvery } from '@mileage/runtime/service';
import {
  createSchemaRoles,
  createTestDatabase,
  waitFor,
  type SchemaRoles,
  type TestDatabase,
} from '@mileage/runtime/testing';
import knexFactory from 'knex';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { openDatabase } from './database';
import { WebhooksRepository } from './repo';
import { SecretBox } from './secrets';
import { sendWebhook } from './sender';
import { createServer } from './server';
import { systemResolver, type Resolver, type TargetPolicy, ANY_PORT } from './targets';
import { startReceiver } from './testing';
import { deliveryPoll, DeliveryWorker, retryDelayMs } from './worker';

const logger = createLogger({ service: 'webhooks-test', level: process.env.LOG_LEVEL ?? 'silent' });
const development: TargetPolicy = { mode: 'development', allow: new Set(['loopback']), ports: ANY_PORT };
const secrets = new SecretBox('test-key-test-key-test-key-test-key');

let testDb: TestDatabase;
let roles: SchemaRoles;
/** The service's login (the runtime role): row-level security applies to it as in production. */
let db: ReturnType<typeof openDatabase>;
/** A superuser's view of the schema, for the tests' own reads and cleanup: it sees every organization. */
let inspect: Knex;
/** An event owner's outbox (as the Drives service keeps one, organizations included), in a schema of its own. */
let source: Knex;
let groupsServer: GrpcServerHandle;
let groups: PromiseClient<groupsV1.GroupsServiceClient>;
let repo: WebhooksRepository;
/** Groups of organization 1 (Bob drives in both); organization 2's group, where Frank drives. */
const demo = 1;
const other = 2;
const globex = 3;

/**
 * The Groups service as the Webhooks service uses it: ListGroups by member, inside the call's organization (which
 * the call must carry, as the real service requires).
 */
function groupsStub(): Handlers<groupsV1.GroupsServiceServer> {
  const teams = [
    { organizationId: 1, id: demo, members: ['AliceAdm01', 'BobDriver1'] },
    { organizationId: 1, id: other, members: ['DaveSolo01', 'BobDriver1'] },
    { organizationId: 2, id: globex, members: ['ErinAdmin1', 'FrankDrv01'] },
  ];
  const unused = async (): Promise<never> => {
    throw errors.internal('not used by the Webhooks service');
  };
  return {
    getGroup: unused,
    listAdministeredGroups: unused,
    checkGroupAdmin: unused,
    createGroup: unused,
    updateGroup: unused,
    patchGroup: unused,
    setMemberRoles: unused,
    removeMembers: unused,
    listProvisioningEvents: unused,
    eraseOrganization: unused,
    writeExportPart: unused,
    async listGroups(request, ctx) {
      const organizationId = requireOrganization(ctx);
      const expr = request.filter?.expr;
      if (
        expr?.$case !== 'comparison' ||
        expr.value.attribute !== 'members.value' ||
        expr.value.operator !== filterV1.Operator.OPERATOR_EQ ||
        expr.value.value?.$case !== 'stringValue'
      )
        throw errors.invalidArgument('the stub answers members.value eq only');
      const member = expr.value.value.value;
      const found = teams.filter((t) => t.organizationId === organizationId && t.members.includes(member));
      return {
        groups: found.slice(request.offset, request.offset + request.limit).map((t) => ({
          id: t.id,
          displayName: `Group ${t.id}`,
          members: [],
          version: 1,
          organizationId: t.organizationId,
        })),
        totalSize: found.length,
      };
    },
  };
}

/** A client whose every call acts inside `organizationId`, as the gateway's calls do. */
function asOrganization<C>(client: PromiseClient<C>, organizationId: number): PromiseClient<C> {
  return new Proxy(client, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name);
      if (typeof value !== 'function' || name === 'close') return value;
      return (request: unknown, settings?: CallSettings) =>
        (value as (r: unknown, s: CallSettings) => unknown).call(target, request, { organizationId, ...settings });
    },
  });
}

/** A webhooks gRPC server with its own policy and worker(s), and a client. */
async function startService(
  options: {
    policy?: TargetPolicy;
    resolver?: Resolver;
    groups?: PromiseClient<groupsV1.GroupsServiceClient>;
    workers?: number;
    serverLogger?: Logger;
    slots?: { concurrency: number; perSubscription: number; timeoutMs: number };
    /** How often the workers poll the queue (default 30 ms). */
    pollMs?: number;
    /** The workers' repository (a test may wrap its claims). */
    workerRepo?: WebhooksRepository;
  } = {},
) {
  const policy = options.policy ?? development;
  const resolver = options.resolver ?? systemResolver;
  const workers = Array.from(
    { length: options.workers ?? 1 },
    () =>
      new DeliveryWorker({
        repo: options.workerRepo ?? repo,
        secrets,
        logger,
        metrics: new Metrics('webhooks'),
        send: { policy, resolver, connectTimeoutMs: 1_000, timeoutMs: options.slots?.timeoutMs ?? 2_000 },
        concurrency: options.slots?.concurrency ?? 8,
        perSubscription: options.slots?.perSubscription ?? 8,
        retry: { baseMs: 40, maxDelayMs: 150, windowMs: 60_000 },
        disable: { afterFailures: 1_000, afterMs: 3_600_000 },
        leaseMarginMs: 100,
      }),
  );
  const server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [
      createServer({
        repo,
        secrets,
        policy,
        resolver,
        groups: options.groups ?? groups,
        worker: workers[0]!,
        logger: options.serverLogger ?? logger,
      }),
    ],
    protoFiles: [PROTO_FILES.webhooks],
    logger,
    metrics: new Metrics('webhooks'),
  });
  const unscoped = createGrpcClient(webhooksV1.WebhooksServiceClient, `127.0.0.1:${server.port}`, {
    defaultDeadlineMs: 5_000,
  });
  const loops = workers.map((w) => runEvery(deliveryPoll(w, options.pollMs ?? 30), () => {}));
  return {
    /** Calls inside organization 1 (the demo organization). */
    client: asOrganization(unscoped, 1),
    as: (organizationId: number) => asOrganization(unscoped, organizationId),
    /** Calls without an organization (as the outbox relays make them). */
    unscoped,
    workers,
    async close() {
      // The polls' stop stops their workers, as at a service's shutdown.
      await Promise.all(loops.map((l) => l.stop()));
      unscoped.close();
      await server.shutdown(1_000);
      // Each test starts without the subscriptions of the one before.
      await inspect('subscriptions').delete();
    },
  };
}

async function rejection(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (err) {
    return decodeServiceError(err as ServiceError);
  }
  assert.fail('expected the call to fail');
}

const event = (
  type: string,
  groupId: number,
  data: Record<string, unknown> = {},
  organizationId = 1,
  userId = 'BobDriver1',
): webhooksV1.Event => ({
  id: randomUUID(),
  type,
  groupId,
  userId,
  occurTime: dateToTimestamp(new Date()),
  dataJson: JSON.stringify(data),
  organizationId,
});

const verify = (secret: string, r: { headers: Record<string, unknown>; body: string }) =>
  new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as {
    type: string;
    data: Record<string, unknown>;
  };

before(async () => {
  testDb = await createTestDatabase('webhooks');
  roles = await createSchemaRoles(testDb, 'webhooks');
  const owner = openDatabase({ url: roles.urlOf(roles.owner) });
  try {
    await owner.migrate({ runtimeRole: roles.runtime.role });
  } finally {
    await owner.close();
  }
  db = openDatabase({ url: roles.urlOf(roles.runtime) });
  inspect = openDatabase({ url: testDb.url }).knex;
  repo = new WebhooksRepository(db.knex);
  source = knexFactory({ client: 'pg', connection: testDb.url, searchPath: ['source'] });
  await source.raw('CREATE SCHEMA source');
  await createOutboxTable(source);
  for (const statement of [...outboxOrganizationExpandStatements(), ...outboxOrganizationContractStatements()])
    await source.raw(statement);
  groupsServer = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [
      { definition: groupsV1.GroupsServiceService, handlers: groupsStub() as ServiceRegistration['handlers'] },
    ],
    protoFiles: [PROTO_FILES.groups],
    logger,
    metrics: new Metrics('groups'),
  });
  groups = createGrpcClient(groupsV1.GroupsServiceClient, `127.0.0.1:${groupsServer.port}`, {
    defaultDeadlineMs: 5_000,
  });
});

after(async () => {
  groups.close();
  await groupsServer.shutdown(1_000);
  await Promise.all([db.close(), inspect.destroy(), source.destroy()]);
  await roles.drop();
});

describe('subscriptions', () => {
  test('create shows the secret once; list and delete; events validated; per-group URL unique', async () => {
    const svc = await startService();
    try {
      const created = await svc.client.createSubscription({
        groupId: demo,
        url: 'http://127.0.0.1:9/hook',
        events: ['drive.reported', 'drive.deleted'],
      });
      assert.match(created.secret, /^whsec_/);
      assert.equal(created.subscription!.state, 'active');
      const stored = await inspect('subscriptions').where({ id: created.subscription!.id }).first();
      assert.ok(!stored.secret.includes(created.secret.slice(6)), 'the secret is encrypted at rest');
      const { subscriptions } = await svc.client.listSubscriptions({ groupId: demo });
      assert.deepEqual(subscriptions, [created.subscription]);
      assert.equal(JSON.stringify(subscriptions).includes('whsec_'), false);
      assert.deepEqual((await svc.client.listSubscriptions({ groupId: other })).subscriptions, []);

      const dup = await rejection(
        svc.client.createSubscription({ groupId: demo, url: 'http://127.0.0.1:9/hook', events: ['drive.deleted'] }),
      );
      assert.equal(dup.code, status.ALREADY_EXISTS);
      for (const events of [[], ['drive.nope'], ['drive.deleted', 'drive.deleted']]) {
        const bad = await rejection(
          svc.client.createSubscription({ groupId: demo, url: 'http://127.0.0.1:9/x', events }),
        );
        assert.equal(bad.code, status.INVALID_ARGUMENT, JSON.stringify(events));
      }
      // Another group's admin cannot reach it through their group id.
      const id = created.subscription!.id;
      assert.equal(
        (await rejection(svc.client.deleteSubscription({ groupId: other, subscriptionId: id }))).code,
        status.NOT_FOUND,
      );
      await svc.client.deleteSubscription({ groupId: demo, subscriptionId: id });
      assert.equal(
        (await rejection(svc.client.deleteSubscription({ groupId: demo, subscriptionId: id }))).code,
        status.NOT_FOUND,
      );
      assert.equal(
        (await rejection(svc.client.listDeliveries({ groupId: demo, subscriptionId: 'not-a-uuid', limit: 0 }))).code,
        status.NOT_FOUND,
      );
    } finally {
      await svc.close();
    }
  });

  test('hostile URLs are refused at creation (private, metadata, loopback, file:, http in production)', async () => {
    const production = await startService({ policy: { mode: 'production', allow: new Set(), ports: ANY_PORT } });
    const dev = await startService({ policy: { mode: 'development', allow: new Set(), ports: ANY_PORT } });
    try {
      for (const [svc, url] of [
        [production, 'https://10.0.0.1/hook'],
        [production, 'https://169.254.169.254/latest/meta-data/'],
        [production, 'https://[::1]/hook'],
        [production, 'https://127.0.0.1/hook'],
        [production, 'https://localhost/hook'],
        [production, 'https://[::ffff:10.0.0.1]/hook'],
        [production, 'file:///etc/passwd'],
        [production, 'http://example.com/hook'],
        [dev, 'http://127.0.0.1:8080/hook'],
        [dev, 'http://192.168.0.10/hook'],
        [dev, 'ftp://example.com/'],
      ] as const) {
        const err = await rejection(svc.client.createSubscription({ groupId: demo, url, events: ['drive.reported'] }));
        assert.equal(err.code, status.INVALID_ARGUMENT, url);
        assert.equal(err.fieldViolations[0]?.field, 'url', url);
      }
      assert.deepEqual((await production.client.listSubscriptions({ groupId: demo })).subscriptions, []);
    } finally {
      await production.close();
      await dev.close();
    }
  });

  test('a refused target is only "not an allowed target" to the client; the resolver answer goes to the log', async () => {
    const logged: Record<string, unknown>[] = [];
    const serverLogger = { info: (fields: Record<string, unknown>) => logged.push(fields) } as unknown as Logger;
    const resolver: Resolver = async (host) => {
      if (host === 'db.internal') return [{ address: '10.1.2.3', family: 4 }];
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    };
    const svc = await startService({
      policy: { mode: 'production', allow: new Set(), ports: ANY_PORT },
      resolver,
      serverLogger,
    });
    try {
      for (const [url, reason] of [
        ['https://db.internal/hook', 'db.internal (10.1.2.3) is a private address'],
        ['https://gone.internal/hook', 'gone.internal does not resolve (ENOTFOUND)'],
      ] as const) {
        const err = await rejection(svc.client.createSubscription({ groupId: demo, url, events: ['drive.reported'] }));
        assert.equal(err.code, status.INVALID_ARGUMENT);
        const shown = JSON.stringify(err);
        assert.match(shown, /not an allowed target/);
        for (const secret of ['10.1.2.3', 'ENOTFOUND', 'private', 'resolve'])
          assert.doesNotMatch(shown, new RegExp(secret));
        assert.deepEqual(logged.at(-1), { group_id: demo, reason });
      }
    } finally {
      await svc.close();
    }
  });
});

describe('delivery', () => {
  test('drive.reported reaches a receiver, woken by its publication, signed (Standard Webhooks)', async () => {
    const receiver = await startReceiver();
    // The poll is ten minutes away: only the publication's wake can deliver. How soon is bench:webhooks' figure.
    const svc = await startService({ pollMs: 600_000 });
    const relay = new OutboxRelay({
      knex: source,
      publish: async (rows) => void (await svc.unscoped.publishEvents({ events: rows.map(toWebhookEvent) })),
    });
    const relaying = runEvery({ name: 'relay', everyMs: 100, run: () => relay.run() }, () => {});
    try {
      const { subscription, secret } = await svc.client.createSubscription({
        groupId: demo,
        url: receiver.url,
        events: ['drive.reported'],
      });
      // Another group's subscriber and a subscriber to other types hear nothing.
      const bystander = await startReceiver();
      await svc.client.createSubscription({ groupId: other, url: bystander.url, events: ['drive.reported'] });
      await svc.client.createSubscription({ groupId: demo, url: bystander.url, events: ['drive.deleted'] });

      // The owner's transaction declares its organization; the event takes it (the outbox's strict default).
      const id = await inOrganization(source, 1, (trx) =>
        recordEvent(trx, { type: 'drive.reported', groupId: String(demo), userId: 'BobDriver1', data: { id: '17' } }),
      );
      await waitFor(() => receiver.received.length > 0, { timeoutMs: 30_000, what: 'the delivery' });
      const [got] = receiver.received;
      assert.equal(got!.headers['webhook-id'], id);
      assert.match(String(got!.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
      const body = verify(secret, got!);
      assert.equal(body.type, 'drive.reported');
      assert.deepEqual(body.data, { id: '17', group_id: String(demo) });
      assert.equal(got!.headers['content-type'], 'application/json');

      await waitFor(async () => (await source('outbox').count<{ count: string }[]>('*'))[0]!.count === '0');
      await waitFor(async () => {
        const { deliveries } = await svc.client.listDeliveries({
          groupId: demo,
          subscriptionId: subscription!.id,
          limit: 0,
        });
        return deliveries[0]?.status === 'succeeded';
      });
      const { deliveries } = await svc.client.listDeliveries({
        groupId: demo,
        subscriptionId: subscription!.id,
        limit: 0,
      });
      assert.equal(deliveries.length, 1);
      assert.equal(deliveries[0]!.eventId, id);
      assert.equal(deliveries[0]!.attempts, 1);
      assert.equal(deliveries[0]!.lastStatusCode, 204);
      assert.equal(bystander.received.length, 0);
      await bystander.close();
      await relaying.stop();
      assert.equal(relay instanceof OutboxRelay, true);
    } finally {
      await relaying.stop();
      await svc.close();
      await receiver.close();
    }
  });

  test('a receiver that is down gets every event when it returns; duplicates only with the same webhook-id', async () => {
    const receiver = await startReceiver();
    const svc = await startService();
    try {
      const { secret } = await svc.client.createSubscription({
        groupId: demo,
        url: receiver.url,
        events: ['drive.deleted'],
      });
      await receiver.down();
      const sent = Array.from({ length: 20 }, (_, i) => event('drive.deleted', demo, { drive_id: i + 1 }));
      const published = await svc.client.publishEvents({ events: sent });
      assert.deepEqual(published, { accepted: 20, deliveries: 20 });
      // Published again (a relay that died before deleting its rows): stored once, delivered once.
      assert.deepEqual(await svc.client.publishEvents({ events: sent.slice(0, 5) }), { accepted: 0, deliveries: 0 });
      await waitFor(async () => Number((await inspect('deliveries').max('attempts as m').first())!.m) >= 3, {
        what: 'retries while the receiver is down',
      });
      // Now it answers, first with errors for some, then fine.
      let flaky = 5;
      receiver.respond = () => (flaky-- > 0 ? { status: 503 } : { status: 200, body: 'ok' });
      await receiver.up();
      const ids = new Set(sent.map((e) => e.id));
      await waitFor(() => new Set(receiver.received.map((r) => r.headers['webhook-id'])).size === 20, {
        what: 'every event delivered',
      });
      await waitFor(
        async () =>
          (await inspect('deliveries').where({ status: 'pending' }).count<{ count: string }[]>('*'))[0]!.count === '0',
      );
      for (const r of receiver.received) {
        assert.ok(ids.has(String(r.headers['webhook-id'])));
        assert.equal(verify(secret, r).type, 'drive.deleted');
      }
      // Every duplicate is a redelivery of the same event with the same webhook-id.
      const byId = new Map<string, string>();
      for (const r of receiver.received) {
        const eventId = String(r.headers['webhook-id']);
        const prior = byId.get(eventId);
        if (prior) assert.equal(prior, r.body, 'a duplicate carries the same body');
        byId.set(eventId, r.body);
      }
      assert.equal(byId.size, 20);
    } finally {
      await svc.close();
      await receiver.close();
    }
  });

  test('two workers deliver a burst without duplicates', async () => {
    const receiver = await startReceiver();
    const svc = await startService({ workers: 2 });
    try {
      await svc.client.createSubscription({ groupId: other, url: receiver.url, events: ['drive.report_updated'] });
      const sent = Array.from({ length: 300 }, () => event('drive.report_updated', other));
      await svc.client.publishEvents({ events: sent });
      await waitFor(() => receiver.received.length >= 300, { timeoutMs: 20_000, what: '300 deliveries' });
      await waitFor(
        async () =>
          (await inspect('deliveries').where({ status: 'pending' }).count<{ count: string }[]>('*'))[0]!.count === '0',
      );
      const ids = receiver.received.map((r) => r.headers['webhook-id']);
      assert.equal(ids.length, 300, 'no event delivered twice');
      assert.equal(new Set(ids).size, 300);
    } finally {
      await svc.close();
      await receiver.close();
    }
  });

  test("an offboarded organization's deliveries are paused: none is claimed until they are resumed", async () => {
    const receiver = await startReceiver();
    const svc = await startService({ workers: 0 });
    try {
      await svc.client.createSubscription({ groupId: demo, url: receiver.url, events: ['drive.report_withdrawn'] });
      const e = event('drive.report_withdrawn', demo);
      await svc.client.publishEvents({ events: [e] });
      const { organization_id: organizationId } = await inspect('deliveries').where({ event_id: e.id }).first();
      await svc.client.setDeliveriesPaused({ organizationId: Number(organizationId), paused: true });
      assert.deepEqual(await repo.claim(10, 200, 10), [], 'paused');
      await svc.client.setDeliveriesPaused({ organizationId: Number(organizationId), paused: false });
      const claimed = await repo.claim(10, 200, 10);
      assert.deepEqual(
        claimed.map((c) => c.event_id),
        [e.id],
        'resumed: nothing was dropped',
      );
    } finally {
      await svc.close();
      await receiver.close();
    }
  });

  test('a worker killed mid-delivery loses nothing: the lease ends and another worker delivers the same webhook-id', async () => {
    const receiver = await startReceiver();
    const svc = await startService({ workers: 0 });
    try {
      await svc.client.createSubscription({ groupId: demo, url: receiver.url, events: ['drive.report_withdrawn'] });
      const e = event('drive.report_withdrawn', demo);
      await svc.client.publishEvents({ events: [e] });
      // A worker claims it and dies before it records anything (its attempt is counted, its lease is short).
      const [claimed] = await repo.claim(10, 200, 10);
      assert.equal(claimed!.event_id, e.id);
      assert.deepEqual(
        await repo.claim(10, 200, 10),
        [],
        'a leased delivery is not claimed again while the lease runs',
      );
      const survivor = new DeliveryWorker({
        repo,
        secrets,
        logger,
        metrics: new Metrics('webhooks'),
        send: { policy: development, resolver: systemResolver, connectTimeoutMs: 1_000, timeoutMs: 2_000 },
        concurrency: 4,
        perSubscription: 4,
        retry: { baseMs: 40, maxDelayMs: 150, windowMs: 60_000 },
        disable: { afterFailures: 1_000, afterMs: 3_600_000 },
      });
      await waitFor(async () => {
        await survivor.drain();
        return receiver.received.length === 1;
      });
      assert.equal(receiver.received[0]!.headers['webhook-id'], e.id);
      const row = await inspect('deliveries').where({ event_id: e.id }).first();
      assert.equal(row.status, 'succeeded');
      assert.equal(row.attempts, 2);
      // The dead worker's late report changes nothing.
      const late = await repo.record(
        claimed!,
        { success: false, statusCode: 0, latencyMs: 1, error: 'late' },
        {
          afterFailures: 1,
          afterMs: 0,
        },
      );
      assert.equal(late.recorded, false);
    } finally {
      await svc.close();
      await receiver.close();
    }
  });

  test('at delivery: a redirect is not followed, an address that now resolves privately is refused', async () => {
    const target = await startReceiver('/internal');
    const redirecting = await startReceiver();
    redirecting.respond = () => ({ status: 302, headers: { location: target.url } });
    let rebind = false;
    const resolver: Resolver = async (host) =>
      host === 'hooks.example' ? [{ address: rebind ? '10.0.0.1' : '127.0.0.1', family: 4 }] : systemResolver(host);
    const svc = await startService({ resolver });
    try {
      const a = await svc.client.createSubscription({
        groupId: demo,
        url: redirecting.url,
        events: ['user.deactivated'],
      });
      const b = await svc.client.createSubscription({
        groupId: demo,
        url: `http://hooks.example:${target.port}/hook`,
        events: ['user.deactivated'],
      });
      rebind = true;
      // user.deactivated has no group: the service asks the Groups service for Bob's groups.
      const e = { ...event('user.deactivated', 0), groupId: 0 };
      assert.deepEqual(await svc.client.publishEvents({ events: [e] }), { accepted: 1, deliveries: 2 });
      const last = async (id: string) =>
        (await svc.client.listDeliveries({ groupId: demo, subscriptionId: id, limit: 1 })).deliveries[0]!;
      await waitFor(
        async () => (await last(a.subscription!.id)).attempts >= 2 && (await last(b.subscription!.id)).attempts >= 2,
      );
      assert.equal(redirecting.received.length >= 2, true);
      assert.equal(target.received.length, 0, 'neither the redirect nor the rebound name reached the target');
      const ra = await last(a.subscription!.id);
      assert.equal(ra.lastStatusCode, 302);
      assert.match(ra.lastError, /redirects are not followed/);
      const rb = await last(b.subscription!.id);
      assert.equal(rb.lastStatusCode, 0);
      // The delivery log a group administrator reads names neither the address nor its class.
      assert.equal(rb.lastError, 'not an allowed target');
      assert.equal(rb.status, 'pending');

      // Redelivery: due at once, same webhook-id.
      redirecting.respond = () => ({ status: 200 });
      const before = redirecting.received.length;
      await waitFor(() => redirecting.received.length > before);
      await waitFor(async () => (await last(a.subscription!.id)).status === 'succeeded');
      const { delivery } = await svc.client.redeliverDelivery({
        groupId: demo,
        subscriptionId: a.subscription!.id,
        deliveryId: ra.id,
      });
      assert.equal(delivery!.status, 'pending');
      const count = redirecting.received.length;
      await waitFor(() => redirecting.received.length > count);
      assert.equal(redirecting.received.at(-1)!.headers['webhook-id'], e.id);
      assert.equal(
        (
          await rejection(
            svc.client.redeliverDelivery({ groupId: other, subscriptionId: a.subscription!.id, deliveryId: ra.id }),
          )
        ).code,
        status.NOT_FOUND,
      );
    } finally {
      await svc.close();
      await target.close();
      await redirecting.close();
    }
  });

  test('the sender keeps to its limits: connect and total timeouts, body read no further than the limit', async () => {
    const slow = await startReceiver();
    slow.respond = () => ({ status: 200, body: 'x'.repeat(1_000_000) });
    const options = { policy: development, resolver: systemResolver, connectTimeoutMs: 500, timeoutMs: 1_000 };
    const big = await sendWebhook(slow.url, {}, '{}', options);
    assert.equal(big.outcome, 'success');
    // A black-holed address (TEST-NET, never routed) would be refused; a listener that never answers times out.
    const hang = await import('node:net').then(
      (net) =>
        new Promise<import('node:net').Server>((resolve) => {
          const s = net.createServer(() => {});
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    );
    const port = (hang.address() as import('node:net').AddressInfo).port;
    const timedOut = await sendWebhook(`http://127.0.0.1:${port}/`, {}, '{}', options);
    assert.equal(timedOut.outcome, 'timeout');
    assert.ok(timedOut.latencyMs >= 900 && timedOut.latencyMs < 3_000, String(timedOut.latencyMs));
    hang.close();
    const refused = await sendWebhook('http://10.0.0.1/', {}, '{}', options);
    assert.equal(refused.outcome, 'refused');
    // At delivery too: http once the service runs in production mode, and any other scheme.
    const production = {
      ...options,
      policy: { mode: 'production' as const, allow: new Set(['loopback'] as const), ports: ANY_PORT },
    };
    const http = await sendWebhook(slow.url, {}, '{}', production);
    assert.equal(http.outcome, 'refused');
    assert.match(http.error, /only https/);
    assert.equal((await sendWebhook('file:///etc/passwd', {}, '{}', options)).outcome, 'refused');
    assert.equal(slow.received.length, 1, 'nothing refused reached the receiver');
    await slow.close();
  });

  test('a run of failures disables the webhook (no attempts while disabled); redelivery enables it again', async () => {
    const receiver = await startReceiver();
    receiver.respond = () => ({ status: 500 });
    const svc = await startService({ workers: 0 });
    const worker = new DeliveryWorker({
      repo,
      secrets,
      logger,
      metrics: new Metrics('webhooks'),
      send: { policy: development, resolver: systemResolver, connectTimeoutMs: 1_000, timeoutMs: 2_000 },
      concurrency: 4,
      perSubscription: 4,
      retry: { baseMs: 1, maxDelayMs: 1, windowMs: 60_000 },
      disable: { afterFailures: 3, afterMs: 0 },
    });
    try {
      const created = await svc.client.createSubscription({
        groupId: demo,
        url: receiver.url,
        events: ['drive.deleted'],
      });
      await svc.client.publishEvents({ events: [event('drive.deleted', demo), event('drive.deleted', demo)] });
      const subscription = async () => (await svc.client.listSubscriptions({ groupId: demo })).subscriptions[0]!;
      await waitFor(async () => {
        await worker.drain();
        return (await subscription()).state === 'disabled';
      });
      const disabled = await subscription();
      assert.match(disabled.disabledReason, /3 or more failed attempts in a row/);
      assert.ok(disabled.disableTime);
      assert.ok(disabled.failureRun >= 3);
      const attempts = receiver.received.length;
      await worker.drain();
      assert.equal(receiver.received.length, attempts, 'a disabled webhook gets no attempts');

      receiver.respond = () => ({ status: 200 });
      const { deliveries } = await svc.client.listDeliveries({
        groupId: demo,
        subscriptionId: created.subscription!.id,
        limit: 0,
      });
      await svc.client.redeliverDelivery({
        groupId: demo,
        subscriptionId: created.subscription!.id,
        deliveryId: deliveries[0]!.id,
      });
      assert.equal((await subscription()).state, 'active');
      await waitFor(async () => {
        await worker.drain();
        const { deliveries: after } = await svc.client.listDeliveries({
          groupId: demo,
          subscriptionId: created.subscription!.id,
          limit: 0,
        });
        return after.every((d) => d.status === 'succeeded');
      });
      assert.equal((await subscription()).failureRun, 0);
    } finally {
      await worker.stop();
      await svc.close();
      await receiver.close();
    }
  });
});

describe('organizations', () => {
  test('events reach only subscriptions of their organization, even under the same group id', async () => {
    const ours = await startReceiver();
    const theirs = await startReceiver();
    const asked: (number | undefined)[] = [];
    const recordingGroups = Object.assign(Object.create(groups) as typeof groups, {
      listGroups: (request: groupsV1.ListGroupsRequest, settings?: CallSettings) => {
        asked.push(settings?.organizationId);
        return groups.listGroups(request, settings);
      },
    });
    const svc = await startService({ groups: recordingGroups });
    try {
      const types = ['drive.reported', 'user.deactivated'];
      await svc.client.createSubscription({ groupId: demo, url: ours.url, events: types });
      // Organization 2 subscribes under organization 1's group id, and under its own group.
      const { secret } = await svc.as(2).createSubscription({ groupId: demo, url: theirs.url, events: types });
      await svc.as(2).createSubscription({ groupId: globex, url: theirs.url, events: ['user.deactivated'] });
      const publish = (e: webhooksV1.Event) => svc.unscoped.publishEvents({ events: [e] });

      const ofTwo = event('drive.reported', demo, { id: '2' }, 2);
      assert.deepEqual(await publish(ofTwo), { accepted: 1, deliveries: 1 });
      const ofOne = event('drive.reported', demo, { id: '1' }, 1);
      assert.deepEqual(await publish(ofOne), { accepted: 1, deliveries: 1 });

      // user.deactivated: the user's groups are looked up inside the event's organization.
      const frankGone = event('user.deactivated', 0, {}, 2, 'FrankDrv01');
      assert.deepEqual(await publish(frankGone), { accepted: 1, deliveries: 1 });
      const bobGone = event('user.deactivated', 0, {}, 1, 'BobDriver1');
      assert.deepEqual(await publish(bobGone), { accepted: 1, deliveries: 1 });
      // Organization 1's user named in an event of organization 2 is in none of organization 2's groups.
      assert.deepEqual(await publish(event('user.deactivated', 0, {}, 2, 'BobDriver1')), {
        accepted: 1,
        deliveries: 0,
      });
      assert.deepEqual(asked, [2, 1, 2]);

      await waitFor(() => ours.received.length === 2 && theirs.received.length === 2, { what: 'the deliveries' });
      const ids = (r: typeof ours) => r.received.map((x) => x.headers['webhook-id']).sort();
      assert.deepEqual(ids(ours), [ofOne.id, bobGone.id].sort());
      assert.deepEqual(ids(theirs), [ofTwo.id, frankGone.id].sort());
      const delivered = theirs.received.find((r) => r.headers['webhook-id'] === ofTwo.id)!;
      assert.deepEqual(verify(secret, delivered).data, { id: '2', group_id: String(demo) });

      // An event must name its organization.
      const nameless = await rejection(publish(event('drive.reported', demo, {}, 0)));
      assert.equal(nameless.code, status.INVALID_ARGUMENT);
      assert.equal(nameless.fieldViolations[0]?.field, 'events.0.organization_id');
    } finally {
      await svc.close();
      await ours.close();
      await theirs.close();
    }
  });

  test("another organization's subscription is NOT_FOUND on every call, exactly as an unknown one", async () => {
    const svc = await startService({ workers: 0 });
    try {
      const url = 'http://127.0.0.1:9/hook';
      const { subscription } = await svc.client.createSubscription({ groupId: demo, url, events: ['drive.deleted'] });
      await svc.unscoped.publishEvents({ events: [event('drive.deleted', demo)] });
      const subscriptionId = subscription!.id;
      const [delivery] = (await svc.client.listDeliveries({ groupId: demo, subscriptionId, limit: 0 })).deliveries;

      const intruder = svc.as(2);
      const probes = (subscriptionId: string, deliveryId: string) => [
        intruder.deleteSubscription({ groupId: demo, subscriptionId }),
        intruder.listDeliveries({ groupId: demo, subscriptionId, limit: 0 }),
        intruder.redeliverDelivery({ groupId: demo, subscriptionId, deliveryId }),
      ];
      const theirs = await Promise.all(probes(subscriptionId, delivery!.id).map(rejection));
      const unknown = await Promise.all(probes(randomUUID(), '999999').map(rejection));
      for (const [i, err] of theirs.entries()) {
        assert.equal(err.code, status.NOT_FOUND);
        assert.deepEqual(err, unknown[i]);
      }
      assert.deepEqual((await intruder.listSubscriptions({ groupId: demo })).subscriptions, []);
      // The same URL under the same group id is no duplicate in another organization: nothing is revealed.
      await intruder.createSubscription({ groupId: demo, url, events: ['drive.deleted'] });

      // Nothing changed in organization 1.
      assert.deepEqual((await svc.client.listSubscriptions({ groupId: demo })).subscriptions, [subscription]);
      const untouched = await inspect('deliveries').where({ id: delivery!.id }).first();
      assert.equal(untouched.status, 'pending');
      assert.equal(untouched.attempts, 0);

      // A client's call without an organization is refused.
      for (const call of [
        svc.unscoped.createSubscription({ groupId: demo, url: 'http://127.0.0.1:9/x', events: ['drive.deleted'] }),
        svc.unscoped.listSubscriptions({ groupId: demo }),
        svc.unscoped.deleteSubscription({ groupId: demo, subscriptionId }),
        svc.unscoped.listDeliveries({ groupId: demo, subscriptionId, limit: 0 }),
        svc.unscoped.redeliverDelivery({ groupId: demo, subscriptionId, deliveryId: delivery!.id }),
      ]) {
        const err = await rejection(call);
        assert.equal(err.code, status.FAILED_PRECONDITION);
        assert.equal(err.reason, 'ORGANIZATION_REQUIRED');
      }
    } finally {
      await svc.close();
    }
  });

  test('defence in depth: a query without its organization filter sees only its organization; none declared, nothing', async () => {
    const svc = await startService({ workers: 0 });
    try {
      for (const organizationId of [1, 2]) {
        await svc
          .as(organizationId)
          .createSubscription({ groupId: demo, url: 'http://127.0.0.1:9/hook', events: ['drive.deleted'] });
        await svc.unscoped.publishEvents({ events: [event('drive.deleted', demo, {}, organizationId)] });
      }
      const organizationsIn = (knex: Knex, table: string) =>
        knex(table)
          .distinct('organization_id')
          .then((rows: { organization_id: string }[]) => rows.map((r) => r.organization_id).sort());
      for (const table of ['subscriptions', 'events', 'deliveries']) {
        assert.deepEqual(await organizationsIn(inspect, table), ['1', '2'], `${table} holds both organizations`);
        // The forgotten filter: an unfiltered read inside an organization finds that organization's rows only.
        for (const organizationId of [1, 2])
          assert.deepEqual(
            await inOrganization(db.knex, organizationId, (trx) => organizationsIn(trx, table)),
            [String(organizationId)],
            table,
          );
        // A transaction that declared no organization finds nothing.
        assert.deepEqual(await organizationsIn(db.knex, table), [], table);
      }
      // Nor can a write cross: a row of another organization, or one without a declared organization.
      const codeOf = (work: Promise<unknown>) =>
        work.then(
          () => undefined,
          (err: { code?: string }) => err.code,
        );
      const row = { group_id: demo, url: 'http://127.0.0.1:9/other', events: ['drive.deleted'], secret: 'plain:x' };
      assert.equal(
        await codeOf(
          inOrganization(db.knex, 1, (trx) =>
            trx('subscriptions').insert({ ...row, id: randomUUID(), organization_id: 2 }),
          ),
        ),
        '42501',
        'row-level security refuses a row of another organization',
      );
      assert.equal(
        await codeOf(db.knex.transaction((trx) => trx('subscriptions').insert({ ...row, id: randomUUID() }))),
        '42501',
        'a transaction that declared no organization writes nothing',
      );
      // The keys refuse a delivery of one organization's event to another's subscriber, whoever writes it.
      const [subscription] = await inspect('subscriptions').where({ organization_id: 1 }).select('id');
      const [foreignEvent] = await inspect('events').where({ organization_id: 2 }).select('id');
      for (const organizationId of [1, 2])
        assert.equal(
          await codeOf(
            inspect('deliveries').insert({
              subscription_id: subscription.id,
              event_id: foreignEvent.id,
              organization_id: organizationId,
            }),
          ),
          '23503',
        );
    } finally {
      await svc.close();
    }
  });
});

/**
 * Endpoints that accept connections and never answer (each attempt hangs until its timeout), a healthy receiver, and
 * `dead` subscriptions of the other group to them beside the demo group's healthy one.
 */
async function deadAndHealthy(svc: Awaited<ReturnType<typeof startService>>, dead: number) {
  const hanging = new Set<Socket>();
  const server = createNetServer((socket) => hanging.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const healthy = await startReceiver();
  for (let i = 0; i < dead; i++)
    await svc.client.createSubscription({
      groupId: other,
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/dead/${i}`,
      events: ['drive.reported'],
    });
  await svc.client.createSubscription({ groupId: demo, url: healthy.url, events: ['drive.reported'] });
  return {
    hanging,
    healthy,
    /** The dead attempts still hanging. */
    stillHanging: () => [...hanging].filter((s) => !s.destroyed).length,
    async close() {
      for (const socket of hanging) socket.destroy();
      server.close();
      await healthy.close();
    },
  };
}

describe('fair delivery slots', () => {
  test("one group's ten dead endpoints do not delay another group's first delivery", async () => {
    // Without a per-subscription cap the dead group's 30 deliveries would fill all 12 slots for 15 s.
    const svc = await startService({ slots: { concurrency: 12, perSubscription: 1, timeoutMs: 15_000 } });
    const endpoints = await deadAndHealthy(svc, 10);
    try {
      await svc.client.publishEvents({ events: [1, 2, 3].map(() => event('drive.reported', other)) });
      await waitFor(() => endpoints.hanging.size === 10, { what: 'ten attempts hanging on the dead endpoints' });

      await svc.client.publishEvents({ events: [event('drive.reported', demo)] });
      await waitFor(() => endpoints.healthy.received.length === 1, { timeoutMs: 3_000, what: 'the healthy delivery' });
      // Delivered while every dead attempt still hangs, and no subscription got a second slot.
      assert.equal(endpoints.stillHanging(), 10);
      assert.equal(endpoints.hanging.size, 10);
    } finally {
      await endpoints.close();
      await svc.close();
    }
  });

  test('a delivery published during a claim is claimed at once, not after the attempts in flight end', async () => {
    // The claim to hold: it has read the queue (its snapshot taken) and waits before returning what it found.
    let held: { entered: () => void; release: Promise<void> } | undefined;
    const heldClaims = Object.create(repo) as WebhooksRepository;
    heldClaims.claim = async (...args) => {
      const found = await repo.claim(...args);
      const hold = held;
      held = undefined;
      if (hold) {
        hold.entered();
        await hold.release;
      }
      return found;
    };
    // No poll to look at the queue again: only the wakes.
    const svc = await startService({
      slots: { concurrency: 4, perSubscription: 1, timeoutMs: 15_000 },
      workerRepo: heldClaims,
      pollMs: 600_000,
    });
    const endpoints = await deadAndHealthy(svc, 1);
    try {
      await svc.client.publishEvents({ events: [event('drive.reported', other)] });
      await waitFor(() => endpoints.hanging.size === 1, { what: 'an attempt hanging on the dead endpoint' });

      // A look at the queue finds nothing new; the healthy delivery commits, and its wake comes, while that claim is
      // still on its way back.
      let release = () => {};
      const entered = new Promise<void>((resolve) => {
        held = { entered: resolve, release: new Promise<void>((r) => (release = r)) };
      });
      svc.workers[0]!.wake();
      await entered;
      await svc.client.publishEvents({ events: [event('drive.reported', demo)] });
      release();
      await waitFor(() => endpoints.healthy.received.length === 1, { timeoutMs: 3_000, what: 'the healthy delivery' });
      assert.equal(endpoints.stillHanging(), 1, 'the dead attempt still hangs');
    } finally {
      await endpoints.close();
      await svc.close();
    }
  });

  test("the poll claims what another replica stored while this worker's attempts hang", async () => {
    const svc = await startService({ slots: { concurrency: 4, perSubscription: 1, timeoutMs: 15_000 } });
    // Another replica: it stores the event and wakes its own worker (none here), not this one.
    const replica = await startService({ workers: 0 });
    const endpoints = await deadAndHealthy(svc, 1);
    try {
      await svc.client.publishEvents({ events: [event('drive.reported', other)] });
      await waitFor(() => endpoints.hanging.size === 1, { what: 'an attempt hanging on the dead endpoint' });

      await replica.client.publishEvents({ events: [event('drive.reported', demo)] });
      await waitFor(() => endpoints.healthy.received.length === 1, { timeoutMs: 3_000, what: 'the healthy delivery' });
      assert.equal(endpoints.stillHanging(), 1, 'the dead attempt still hangs');
    } finally {
      await endpoints.close();
      await replica.close();
      await svc.close();
    }
  });
});

describe('retry schedule', () => {
  test('exponential from 10 s, capped at 1 h, ±20 % jitter, and more than 24 h of attempts before giving up', () => {
    for (const r of [0, 0.5, 0.999]) {
      assert.equal(
        retryDelayMs(1, 10_000, 3_600_000, () => r),
        Math.round(10_000 * (0.8 + 0.4 * r)),
      );
      assert.equal(
        retryDelayMs(4, 10_000, 3_600_000, () => r),
        Math.round(80_000 * (0.8 + 0.4 * r)),
      );
      assert.equal(
        retryDelayMs(40, 10_000, 3_600_000, () => r),
        Math.round(3_600_000 * (0.8 + 0.4 * r)),
      );
    }
    // With the worker's rule (retry while the delivery is younger than the window), the last attempt is past 24 h.
    for (const r of [0, 1]) {
      let age = 0;
      let attempts = 1;
      while (age < 86_400_000) age += retryDelayMs(attempts++, 10_000, 3_600_000, () => r);
      assert.ok(age >= 86_400_000 && attempts > 25 && attempts < 45, `${attempts} attempts over ${age / 3_600_000} h`);
    }
  });
});
