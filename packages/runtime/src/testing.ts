/** Helpers for integration tests: a fresh database per test file on the run's real PostgreSQL. */
import type { Client, ServiceError } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before } from 'node:test';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as net from 'node:net';
import pg from 'pg';
import { decodeServiceError, type DecodedError } from './grpc/errors';
import {
  createGrpcClient,
  type CallSettings,
  type GeneratedClientConstructor,
  type PromiseClient,
} from './grpc/grpc-client';
import { startGrpcServer, type GrpcServerHandle, type ServiceRegistration } from './grpc/grpc-server';
import { createLogger } from './telemetry/logger';
import { Metrics } from './telemetry/metrics';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export function testServerUrl(): string {
  return serverOfTheRun('TEST_DATABASE_URL', 'PostgreSQL');
}

export function testRedisUrl(): string {
  return serverOfTheRun('TEST_REDIS_URL', 'redis-server');
}

/** The address of a server tools/testenv/run.mjs started for the whole run. */
function serverOfTheRun(variable: string, server: string): string {
  const url = process.env[variable];
  if (!url)
    throw new Error(
      `${variable} is not set: run the tests through \`npm test\` (tools/testenv/run.mjs), which starts ${server}.`,
    );
  return url;
}

export async function createTestDatabase(prefix = 'test'): Promise<TestDatabase> {
  const serverUrl = testServerUrl();
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A login role and its password. */
export interface TestRole {
  role: string;
  password: string;
}

/**
 * The two database roles the chart gives a service, made fresh in `testDb`: `owner` owns the empty `schema` (it runs
 * the migrations), `runtime` serves and gets only what the migrations grant it; PUBLIC has no access to the schema.
 * `drop()` drops the database, then both roles.
 */
export interface SchemaRoles {
  owner: TestRole;
  runtime: TestRole;
  /** `testDb`'s URL logging in as `who`. */
  urlOf(who: TestRole): string;
  drop(): Promise<void>;
}

export async function createSchemaRoles(
  testDb: TestDatabase,
  schema: string,
  options: { rolePrefix?: string; revokePublicCreate?: boolean } = {},
): Promise<SchemaRoles> {
  const prefix = options.rolePrefix ?? schema;
  const suffix = randomBytes(4).toString('hex');
  const owner = { role: `${prefix}_owner_${suffix}`, password: randomBytes(12).toString('hex') };
  const runtime = { role: `${prefix}_app_${suffix}`, password: randomBytes(12).toString('hex') };
  const admin = new pg.Client({ connectionString: testDb.url });
  await admin.connect();
  try {
    for (const who of [owner, runtime])
      await admin.query(`CREATE ROLE ${who.role} LOGIN NOINHERIT PASSWORD '${who.password}'`);
    await admin.query(`CREATE SCHEMA ${schema} AUTHORIZATION ${owner.role}`);
    await admin.query(`REVOKE ALL ON SCHEMA ${schema} FROM PUBLIC`);
    if (options.revokePublicCreate) await admin.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
  } finally {
    await admin.end();
  }
  return {
    owner,
    runtime,
    urlOf(who) {
      const url = new URL(testDb.url);
      url.username = who.role;
      url.password = who.password;
      return url.toString();
    },
    async drop() {
      await testDb.drop();
      const server = new pg.Client({ connectionString: testServerUrl() });
      await server.connect();
      try {
        for (const who of [owner, runtime]) await server.query(`DROP ROLE IF EXISTS ${who.role}`);
      } finally {
        await server.end();
      }
    },
  };
}

/** A fresh database with a service's schema migrated in; `close()` closes the pool and drops the database. */
export interface MigratedDatabase<D> {
  db: D;
  testDb: TestDatabase;
  close(): Promise<void>;
}

export async function createMigratedDatabase<D extends { migrate(): Promise<unknown>; close(): Promise<void> }>(
  prefix: string,
  open: (url: string) => D,
): Promise<MigratedDatabase<D>> {
  const testDb = await createTestDatabase(prefix);
  const db = open(testDb.url);
  await db.migrate();
  return {
    db,
    testDb,
    async close() {
      await db.close();
      await testDb.drop();
    },
  };
}

export interface TestService<C> {
  server: GrpcServerHandle;
  client: PromiseClient<C>;
  address: string;
  close(): Promise<void>;
}

/**
 * One service's gRPC server on a free loopback port with silent logs, and a client to it (metrics shared with the
 * server); `close()` closes the client and shuts the server down.
 */
export async function startTestService<C extends Client>(options: {
  service: string;
  implementation: ServiceRegistration | ServiceRegistration[];
  protoFile: string;
  Client: GeneratedClientConstructor<C>;
  deadlineMs: number;
}): Promise<TestService<C>> {
  const metrics = new Metrics(options.service);
  const server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [options.implementation].flat(),
    protoFiles: [options.protoFile],
    logger: createLogger({ service: `${options.service}-test`, level: 'silent' }),
    metrics,
  });
  const address = `127.0.0.1:${server.port}`;
  const client = createGrpcClient(options.Client, address, { defaultDeadlineMs: options.deadlineMs, metrics });
  return {
    server,
    client,
    address,
    async close() {
      client.close();
      await server.shutdown(1_000);
    },
  };
}

/**
 * A service test file's fixture: before its tests a fresh migrated database and the service on it over gRPC, after
 * them both gone. `db`, `client` and `address` are set once the file's `before` hooks ran.
 */
export function serviceSuite<D extends { migrate(): Promise<unknown>; close(): Promise<void> }, C>(options: {
  prefix: string;
  open: (url: string) => D;
  start: (db: D) => Promise<TestService<C>>;
}) {
  const suite = { db: undefined as unknown as D, client: undefined as unknown as PromiseClient<C>, address: '' };
  let database: MigratedDatabase<D>;
  let service: TestService<C>;
  before(async () => {
    database = await createMigratedDatabase(options.prefix, options.open);
    suite.db = database.db;
    service = await options.start(database.db);
    suite.client = service.client;
    suite.address = service.address;
  });
  after(async () => {
    await service.close();
    await database.close();
  });
  return suite;
}

/** `client` with every call acting inside `organizationId` (CallSettings.organizationId) unless the call names one. */
export function asOrganization<C>(client: PromiseClient<C>, organizationId: number): PromiseClient<C> {
  return new Proxy(client, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || key === 'close') return value;
      return (request: unknown, settings?: CallSettings) =>
        (value as (r: unknown, s: CallSettings) => unknown).call(target, request, { organizationId, ...settings });
    },
  });
}

/** The decoded error of a call that must fail; fails the test when the call succeeds. */
export async function rejection(promise: Promise<unknown>): Promise<DecodedError> {
  try {
    await promise;
  } catch (err) {
    return decodeServiceError(err as ServiceError);
  }
  assert.fail('expected the call to fail');
}

/** Polls `condition` until it holds (or throws after timeoutMs): synchronisation on state, never on time. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  { timeoutMs = 10_000, intervalMs = 50, what = 'condition' } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * A TCP relay on loopback in front of a real server, to inject the faults a network or a process can have:
 * `freeze()` keeps every connection open but relays nothing (a stopped process, a hung node: callers wait),
 * `stop()` refuses and drops connections (a crashed process), `resume()` restores normal service (frozen
 * connections carry on, as a process does after SIGCONT).
 */
export interface FaultProxy {
  address: string;
  port: number;
  freeze(): void;
  stop(): Promise<void>;
  resume(): Promise<void>;
  close(): Promise<void>;
}

export async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  let mode: 'pass' | 'frozen' | 'stopped' = 'pass';
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    if (mode === 'pass') {
      client.pipe(upstream);
      upstream.pipe(client);
    } else client.pause();
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const dropAll = () => {
    for (const [a, b] of pairs) {
      a.destroy();
      b.destroy();
    }
    pairs.clear();
  };
  return {
    address: `127.0.0.1:${port}`,
    port,
    freeze() {
      mode = 'frozen';
      for (const [a, b] of pairs) {
        a.unpipe(b);
        b.unpipe(a);
        a.pause();
        b.pause();
      }
    },
    async stop() {
      mode = 'stopped';
      dropAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async resume() {
      if (mode === 'stopped') await listen(port);
      else
        for (const [a, b] of pairs) {
          a.pipe(b);
          b.pipe(a);
        }
      mode = 'pass';
    },
    async close() {
      dropAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The GRPC_TLS_SPIFFE_PREFIX of tests: a component's SPIFFE id is this followed by its name. */
export const TEST_SPIFFE_PREFIX = 'spiffe://cluster.local/ns/mileage/sa/mileage-';

/** PEM files of a test PKI made with the `openssl` CLI: a CA, and certificates it signs. */
export interface TestPki {
  dir: string;
  caFile: string;
  /**
   * A certificate for 127.0.0.1 and localhost (server and client use), signed by the CA: [cert, key] files; with
   * `spiffeId`, that URI SAN too (the identity mutual TLS authorizes by: TEST_SPIFFE_PREFIX + a component).
   */
  issue(name: string, spiffeId?: string): { certFile: string; keyFile: string };
}

/**
 * A fresh certificate authority in `dir`, made at test time with the openssl CLI (EC P-256 keys, one day). Throws
 * with the command's output when openssl is missing or fails.
 */
export function createTestPki(dir: string, caName = 'test-ca'): TestPki {
  const run = (args: string[]) => {
    const result = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (result.error || result.status !== 0)
      throw new Error(`openssl ${args.join(' ')} failed: ${result.error?.message ?? result.stderr}`);
  };
  const caKey = path.join(dir, `${caName}.key`);
  const caFile = path.join(dir, `${caName}.crt`);
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', caKey]);
  run(['req', '-x509', '-new', '-key', caKey, '-sha256', '-days', '1', '-subj', `/CN=${caName}`, '-out', caFile]);
  return {
    dir,
    caFile,
    issue(name, spiffeId) {
      const keyFile = path.join(dir, `${name}.key`);
      const csr = path.join(dir, `${name}.csr`);
      const certFile = path.join(dir, `${name}.crt`);
      const ext = path.join(dir, `${name}.ext`);
      writeFileSync(
        ext,
        [
          'basicConstraints=CA:FALSE',
          'keyUsage=digitalSignature,keyEncipherment',
          'extendedKeyUsage=serverAuth,clientAuth',
          `subjectAltName=IP:127.0.0.1,DNS:localhost${spiffeId ? `,URI:${spiffeId}` : ''}`,
        ].join('\n'),
      );
      run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', keyFile]);
      run(['req', '-new', '-key', keyFile, '-subj', `/CN=${name}`, '-out', csr]);
      run([
        'x509',
        '-req',
        '-in',
        csr,
        '-CA',
        caFile,
        '-CAkey',
        caKey,
        '-CAcreateserial',
        '-days',
        '1',
        '-sha256',
        '-extfile',
        ext,
        '-out',
        certFile,
      ]);
      return { certFile, keyFile };
    },
  };
}

/** A node of PostgreSQL's `EXPLAIN (FORMAT JSON)` plan, with the fields the plan tests read. */
export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Filter?: string;
  Plans?: PlanNode[];
}

/** Every node of a plan, the root first. */
export function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}

export { stubUser } from './grpc/users-stub.fixture';
export { s3TestServerBinary, startS3TestServer, type S3TestServer } from './storage/s3-test-server.fixture';
