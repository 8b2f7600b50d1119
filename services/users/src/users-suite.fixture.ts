// The test fixture of the Users process: a fresh database migrated by its owner role, and UsersService and
// OrganizationsService served over gRPC as the runtime role, as the chart runs them. The runtime role matters here:
// the test server's superuser bypasses row-level security, so a service on it would prove nothing about isolation.
import { PROTO_FILES, usersV1 } from '@mileage/proto';
import {
  createGrpcClient,
  startGrpcServer,
  type CallSettings,
  type GrpcServerHandle,
  type PromiseClient,
} from '@mileage/runtime/grpc';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import { createSchemaRoles, createTestDatabase, type SchemaRoles } from '@mileage/runtime/testing';
import { after, before } from 'node:test';
import { openDatabase } from './database';
import { createServer, type UsersServerDeps } from './server';

type Database = ReturnType<typeof openDatabase>;
export type UsersClient = PromiseClient<usersV1.UsersServiceClient>;
export type OrganizationsClient = PromiseClient<usersV1.OrganizationsServiceClient>;

/** `client` with every call made inside `organizationId` (its x-mileage-organization metadata). */
export function inOrganizationOf<C extends object>(client: C, organizationId: number): C {
  return new Proxy(client, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key);
      if (typeof value !== 'function' || key === 'close') return value;
      return (request: unknown, settings?: CallSettings) =>
        (value as (r: unknown, s: CallSettings) => unknown).call(target, request, { ...settings, organizationId });
    },
  });
}

/** A valid user to create, with a fresh userName; `overrides` replace its fields. */
export function user(overrides: Partial<usersV1.User> = {}): usersV1.User {
  return {
    id: '',
    userName: `u${Math.random().toString(36).slice(2)}@example.com`,
    name: { givenName: 'Test', familyName: 'User' },
    emails: [{ value: 'test@example.com', type: 'work', primary: true }],
    active: true,
    timezone: 'America/Chicago',
    version: 0,
    organizationId: 0,
    organizationAdmin: false,
    ...overrides,
  };
}

/** `runtimeOptions`: more of the service pool's options (its size, the organizations' share, the timeouts). */
/** `serverDeps`: more of the service's dependencies (an archive store for exports). */
export function usersSuite(
  prefix: string,
  runtimeOptions: Omit<Parameters<typeof openDatabase>[0], 'url'> = {},
  serverDeps: Omit<UsersServerDeps, 'knex'> = {},
) {
  const suite = {
    /** The superuser's pool: sees every organization's rows (checks of what the service wrote). */
    admin: undefined as unknown as Database,
    /** The pool the service runs on (the runtime role). */
    runtime: undefined as unknown as Database,
    roles: undefined as unknown as SchemaRoles,
    /** Calls without an organization context. */
    users: undefined as unknown as UsersClient,
    organizations: undefined as unknown as OrganizationsClient,
    address: '',
    /** UsersService calls inside `organizationId`. */
    usersIn: (organizationId: number) => inOrganizationOf(suite.users, organizationId),
    organizationsIn: (organizationId: number) => inOrganizationOf(suite.organizations, organizationId),
  };
  let owner: Database;
  let server: GrpcServerHandle;
  before(async () => {
    const testDb = await createTestDatabase(prefix);
    suite.roles = await createSchemaRoles(testDb, 'users', { rolePrefix: prefix });
    owner = openDatabase({ url: suite.roles.urlOf(suite.roles.owner) });
    await owner.migrate({ runtimeRole: suite.roles.runtime.role });
    suite.runtime = openDatabase({ url: suite.roles.urlOf(suite.roles.runtime), ...runtimeOptions });
    suite.admin = openDatabase({ url: testDb.url });
    server = await startGrpcServer({
      address: '127.0.0.1:0',
      services: createServer({ knex: suite.runtime.knex, ...serverDeps }),
      protoFiles: [PROTO_FILES.users],
      logger: createLogger({ service: 'users-test', level: 'silent' }),
      metrics: new Metrics('users'),
    });
    suite.address = `127.0.0.1:${server.port}`;
    suite.users = createGrpcClient(usersV1.UsersServiceClient, suite.address, { defaultDeadlineMs: 5_000 });
    suite.organizations = createGrpcClient(usersV1.OrganizationsServiceClient, suite.address, {
      defaultDeadlineMs: 5_000,
    });
  });
  after(async () => {
    suite.users.close();
    suite.organizations.close();
    await server.shutdown(1_000);
    await Promise.all([owner.close(), suite.runtime.close(), suite.admin.close()]);
    await suite.roles.drop();
  });
  return suite;
}
