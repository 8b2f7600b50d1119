/**
 * Integration-test harness: the whole system wired by devstack's wireStack (who calls whom, which secret goes where,
 * as `npm start`, the bench and chaos wire it) on a real PostgreSQL database, the five services in this process on
 * loopback gRPC ports (so a test can swap one dependency), the development identity provider issuing real signed
 * tokens, and the gateway app (createApp) with the production token verifier pointed at the provider's JWKS.
 */
import { startIdentityProvider } from '@mileage/dev-idp';
import type * as grpc from '@grpc/grpc-js';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { after, before } from 'node:test';
import { drivesV1, groupsV1, PROTO_FILES, scimV1, usersV1, webhooksV1 } from '@mileage/proto';
import { createServer as createDrivesServer, openDatabase as openDrivesDatabase } from '@mileage/drives';
import { createServer as createGroupsServer, openDatabase as openGroupsDatabase } from '@mileage/groups';
import { createServer as createScimServer } from '@mileage/scim';
import {
  createGrpcClient,
  startGrpcServer,
  type CircuitBreakerOptions,
  type GeneratedClientConstructor,
  type GrpcServerHandle,
} from '@mileage/runtime/grpc';
import { createLogger, type Logger, Metrics, startTracing } from '@mileage/runtime/telemetry';
import { dateToTimestamp } from '@mileage/runtime/formats';
import { createTestDatabase, type TestDatabase } from '@mileage/runtime/testing';
import {
  freePlanPorts,
  passwordToken,
  scimClientToken,
  SERVICE_NAMES,
  wireStack,
  type ServiceName,
} from '@mileage/devstack';
import {
  createServer as createUsersServer,
  drivesExportOwner,
  exportTasks,
  groupsExportOwner,
  openDatabase,
  webhooksExportOwner,
} from '@mileage/users';
import { LocalArchiveStore } from '@mileage/runtime/storage';
import {
  configShape as webhooksConfigShape,
  createServer as createWebhooksServer,
  openDatabase as openWebhooksDatabase,
  SecretBox,
  systemResolver,
  WebhooksRepository,
} from '@mileage/webhooks';
import type { Express } from 'express';
import type { Redis } from 'ioredis';
import { importJWK, SignJWT, type JWK } from 'jose';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import express from 'express';
import { z } from 'zod';
import {
  createApp,
  gatewayDependencies,
  OrganizationCredentials,
  OrganizationShares,
  parseClientOrganizations,
  openApiDocument,
  RateLimits,
  TokenVerifier,
  type Readiness,
  type RevocationFeed,
} from '@mileage/gateway';
import { checkAgainstOpenApi, recordResponses, type RecordedResponse } from './contract';

export const ALL_V1_SCOPES = 'users_read drives_read groups_read groups_read_reported_drives';

export const ACCOUNTS = [
  {
    username: 'alice@example.com',
    password: 'alice-pw',
    userId: 'AliceAdm01',
    givenName: 'Alice',
    familyName: 'Admin',
  },
  { username: 'bob@example.com', password: 'bob-pw', userId: 'BobDriver1', givenName: 'Bob', familyName: 'Driver' },
  {
    username: 'ivan@example.com',
    password: 'ivan-pw',
    userId: 'Inactive01',
    givenName: 'Ivan',
    familyName: 'Inactive',
  },
  {
    username: 'ghost@example.com',
    password: 'ghost-pw',
    userId: 'NoAccount1',
    givenName: 'Ghost',
    familyName: 'Nobody',
  },
];

/** Shared by the harness's gateway apps and its SCIM service. */
export const ACTOR_ATTESTATION_SECRET = 'harness-actor-attestation-secret-0123456789';
/** The SCIM service's ACTOR_ATTESTATION_PREVIOUS_SECRET: the key of a rotation's other end, still accepted. */
export const ACTOR_ATTESTATION_PREVIOUS_SECRET = 'harness-previous-attestation-secret-0123456789';

/**
 * The organizations of the harness (CONTRACT §7's demo data, in small): everything above lives in organization 1
 * (`demo`, seeded by the Users migration; Alice its admin, `mileage-scim` bound to it); organization 2 (`globex`) has
 * its admin Erin, driver Frank (admin and driver of "Globex Fleet") and a user whose userName is Demo Org's Bob's.
 */
export const DEMO_ORGANIZATION = 1;
export const GLOBEX = { alias: 'globex', erin: 'ErinAdmin1', frank: 'FrankDrv01', bob: 'GlobexBob1' } as const;
/** The secret of the provisioning client `mileage-scim` at the harness's identity provider. */
const SCIM_CLIENT_SECRET = 'test-scim-secret';
/** Call settings of the harness's seeding: acting inside organization `organizationId`. */
const inOrganization = (organizationId: number) => ({ organizationId });

export interface Harness {
  issuer: string;
  /** "Demo Team": Alice admin, Bob and Ivan drivers. "Other Team": Bob admin and driver. "Globex Fleet" (globex). */
  groups: { demo: number; other: number; globexFleet: number };
  /** Organization 2's id (organization 1 is DEMO_ORGANIZATION). */
  globexId: number;
  /** Bob's drives by classification (newest first by end time), and the drive ids reported to each group. */
  drives: { bobBusiness: number[]; bobPersonal: number[]; reportedDemo: number[]; reportedOther: number[] };
  tokenEndpoint: string;
  usersAddress: string;
  groupsAddress: string;
  drivesAddress: string;
  /** A Drives service as released before `render_json` (its pages always as objects), on the same database. */
  olderDrivesAddress: string;
  scimAddress: string;
  webhooksAddress: string;
  /** Runs the export job once, as a Users replica's task does (the harness runs no background tasks). */
  runExportJob(): Promise<void>;
  /** The Users and Groups databases: each keeps the provisioning audit of its resources. */
  usersDb: ReturnType<typeof openDatabase>;
  groupsDb: ReturnType<typeof openGroupsDatabase>;
  /** The Drives database (to record many drives at once, as no test could through the service). */
  drivesDb: ReturnType<typeof openDrivesDatabase>;
  /** A client-credentials token of the provisioning client `mileage-scim`. */
  scimToken(): Promise<string>;
  /** A gateway app wired like main.ts; options override single dependencies. */
  app(options?: {
    usersAddress?: string;
    groupsAddress?: string;
    drivesAddress?: string;
    scimAddress?: string;
    webhooksAddress?: string;
    deadlineMs?: number;
    redis?: Redis;
    rateLimitPrefix?: string;
    rateLimitMultiplier?: number;
    /** The clients' circuit breaker (as main.ts configures it from GRPC_CIRCUIT_*); default: off. */
    circuitBreaker?: CircuitBreakerOptions;
    /** The app's metrics (to read them in a test); default: a registry of its own. */
    metrics?: Metrics;
    /** Pause between rounds of the dependency checks (default 2 s). */
    dependencyIntervalMs?: number;
    /** The secret the gateway attests SCIM actors with (default: the one the SCIM service shares). */
    actorAttestationSecret?: string;
    /** SCIM_TOKEN_CACHE_SECONDS (default 5). */
    scimTokenCacheSeconds?: number;
    /** How SCIM token revocations reach the app (default: its own only, as one gateway without Redis). */
    revocations?: RevocationFeed;
    /** INVALID_TOKEN_BURST / INVALID_TOKENS_PER_MINUTE: the app gets a verifier of its own with this limit. */
    invalidTokenLimit?: { burst: number; perMinute: number };
    /** Each organization's share of the app (GATEWAY_CAPACITY_UNITS, GATEWAY_ORGANIZATION_SHARE); default: none. */
    shares?: OrganizationShares;
    /** CURSOR_SECRET (default: one every app of the harness shares) and CURSOR_SECRET_PREVIOUS (default: none). */
    cursorSecret?: string;
    cursorSecretPrevious?: string;
    /** The app's Drives client as the test sees it (e.g. to count the pages the app asks for); default: as is. */
    observeDrives?: (client: DrivesClient) => DrivesClient;
    /** The app's logger (to read its lines in a test); default: the harness's. */
    logger?: Logger;
    /** Leaves the app's responses out of `recorded` (a test streaming tens of MB whose shape another test checks). */
    unrecorded?: boolean;
  }): Express;
  drivesClient: DrivesClient;
  /** A real access token from the provider by the password grant of `mileage-dev`. */
  token(username: string, scope: string): Promise<string>;
  /** Signs arbitrary claims with the provider's real signing key (for claims no client can obtain). */
  signWithRealKey(claims: Record<string, unknown>, options?: { expiresIn?: string | number }): Promise<string>;
  realKey(): JWK;
  /** Every response the harness's apps sent (checked against the OpenAPI document on close). */
  recorded: RecordedResponse[];
  close(): Promise<void>;
}

type DrivesClient = ReturnType<typeof createGrpcClient<drivesV1.DrivesServiceClient>>;

export async function startHarness(): Promise<Harness> {
  const testDb: TestDatabase = await createTestDatabase('gateway');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gateway-idp-'));
  const idp = await startIdentityProvider({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    accounts: ACCOUNTS,
    scimClientSecret: SCIM_CLIENT_SECRET,
  });
  const logger = createLogger({ service: 'gateway-test', level: process.env.LOG_LEVEL ?? 'silent' });
  const db = openDatabase({ url: testDb.url });
  await db.migrate();
  const groupsDb = openGroupsDatabase({ url: testDb.url });
  await groupsDb.migrate();
  const drivesDb = openDrivesDatabase({ url: testDb.url });
  await drivesDb.migrate();
  const webhooksDb = openWebhooksDatabase({ url: testDb.url });
  await webhooksDb.migrate();
  // The ports are chosen just before the servers bind them (free a moment ago), the seeding after: a short window.
  const wiring = wireStack({
    services: SERVICE_NAMES,
    hosts: ['127.0.0.1'],
    ...(await freePlanPorts(SERVICE_NAMES, 1)),
    // The apps are tested in-process, on no port: this is only the address the SCIM service names in meta.location.
    gatewayPort: 8080,
    identity: { issuer: idp.issuer },
    // One test database for all, migrated above in this process.
    databaseUrls: {},
    secrets: {
      cursor: 'test-cursor-secret-of-at-least-32-chars',
      actorAttestation: ACTOR_ATTESTATION_SECRET,
      webhooksKey: 'gateway-test-key-of-at-least-32-chars',
    },
    grpc: { plaintext: true },
  });
  const wired = (s: ServiceName) => wiring.services[s]![0]!;
  const gatewayEnv = wiring.gateways[0]!;
  // Organization exports' archives: a directory of the test's own, as DATA_DIR/archives under npm start.
  const archiveDir = mkdtempSync(path.join(tmpdir(), 'harness-archives-'));
  const archives = new LocalArchiveStore(archiveDir);
  const usersServer: GrpcServerHandle = await startGrpcServer({
    address: wired('users').GRPC_ADDRESS!,
    // The Users process serves UsersService and OrganizationsService.
    services: [createUsersServer({ knex: db.knex, archives })].flat(),
    protoFiles: [PROTO_FILES.users],
    logger,
    metrics: new Metrics('users'),
  });
  const usersAddress = wiring.address('users');
  const groupsServer: GrpcServerHandle = await startGrpcServer({
    address: wired('groups').GRPC_ADDRESS!,
    services: [createGroupsServer({ knex: groupsDb.knex, archives })],
    protoFiles: [PROTO_FILES.groups],
    logger,
    metrics: new Metrics('groups'),
  });
  const groupsAddress = wiring.address('groups');
  // Drives asks Groups whether a group is of the drive's organization before it reports a drive to it.
  const drivesGroups = createGrpcClient(groupsV1.GroupsServiceClient, wired('drives').GROUPS_ADDRESS!, {
    defaultDeadlineMs: 5_000,
  });
  const drivesServer: GrpcServerHandle = await startGrpcServer({
    address: wired('drives').GRPC_ADDRESS!,
    services: [createDrivesServer({ knex: drivesDb.knex, groups: drivesGroups, archives })],
    protoFiles: [PROTO_FILES.drives],
    logger,
    metrics: new Metrics('drives'),
  });
  const drivesAddress = wiring.address('drives');
  // The same service as one released before `render_json`: it answers its pages as objects, whatever is asked.
  const current = createDrivesServer({ knex: drivesDb.knex, groups: drivesGroups });
  const asObjects =
    (method: 'listUserDrives' | 'listReportedDrives') => (request: { renderJson?: boolean }, ctx: unknown) =>
      (current.handlers[method] as (r: unknown, c: unknown) => Promise<unknown>)(
        { ...request, renderJson: false },
        ctx,
      );
  const olderDrivesServer: GrpcServerHandle = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [
      {
        definition: current.definition,
        handlers: {
          ...current.handlers,
          listUserDrives: asObjects('listUserDrives'),
          listReportedDrives: asObjects('listReportedDrives'),
        },
      },
    ],
    protoFiles: [PROTO_FILES.drives],
    logger,
    metrics: new Metrics('drives'),
  });

  const scimEnv = wired('scim');
  const scimUsers = createGrpcClient(usersV1.UsersServiceClient, scimEnv.USERS_ADDRESS!, { defaultDeadlineMs: 5_000 });
  const scimGroups = createGrpcClient(groupsV1.GroupsServiceClient, scimEnv.GROUPS_ADDRESS!, {
    defaultDeadlineMs: 5_000,
  });
  const scimMetrics = new Metrics('scim');
  const scimServer: GrpcServerHandle = await startGrpcServer({
    address: scimEnv.GRPC_ADDRESS!,
    services: [
      createScimServer({
        users: scimUsers,
        groups: scimGroups,
        logger,
        baseUrl: scimEnv.SCIM_BASE_URL!,
        metrics: scimMetrics,
        attestation: {
          secrets: [scimEnv.ACTOR_ATTESTATION_SECRET!, ACTOR_ATTESTATION_PREVIOUS_SECRET],
          maxAgeSeconds: 60,
          replayCacheEntries: 10_000,
        },
      }),
    ],
    protoFiles: [PROTO_FILES.scim],
    logger,
    metrics: scimMetrics,
  });
  const scimAddress = wiring.address('scim');

  // The Webhooks service (subscriptions only: no delivery worker here; loopback targets allowed, as npm start does).
  const webhooksConfig = z.object(webhooksConfigShape).parse(wired('webhooks'));
  const webhooksGroups = createGrpcClient(groupsV1.GroupsServiceClient, webhooksConfig.GROUPS_ADDRESS, {
    defaultDeadlineMs: 5_000,
  });
  const webhooksServer: GrpcServerHandle = await startGrpcServer({
    address: wired('webhooks').GRPC_ADDRESS!,
    services: [
      createWebhooksServer({
        repo: new WebhooksRepository(webhooksDb.knex),
        secrets: new SecretBox(webhooksConfig.WEBHOOKS_SECRET_KEY),
        policy: {
          mode: webhooksConfig.WEBHOOKS_MODE,
          allow: webhooksConfig.WEBHOOKS_ALLOW_PRIVATE_TARGETS,
          ports: webhooksConfig.WEBHOOKS_TARGET_PORTS,
        },
        resolver: systemResolver,
        groups: webhooksGroups,
        logger,
        knex: webhooksDb.knex,
        archives,
      }),
    ],
    protoFiles: [PROTO_FILES.webhooks],
    logger,
    metrics: new Metrics('webhooks'),
  });
  const webhooksAddress = wiring.address('webhooks');

  // The harness's data, written through the services.
  const groupsClient = createGrpcClient(groupsV1.GroupsServiceClient, groupsAddress, { defaultDeadlineMs: 5_000 });
  const member = (userId: string, isAdmin: boolean, isDriver: boolean) => ({ userId, isAdmin, isDriver });
  const seedClient = createGrpcClient(usersV1.UsersServiceClient, usersAddress, { defaultDeadlineMs: 5_000 });
  const seedUser = (organizationId: number, id: string, userName: string, givenName: string, familyName: string) =>
    seedClient.createUser(
      {
        user: {
          id,
          userName,
          name: { givenName, familyName },
          emails: [{ value: userName, type: 'work', primary: true }],
          active: id !== 'Inactive01',
          timezone: 'UTC',
          version: 0,
          // The Users service takes the organization from the call's context; the admin role is set below.
          organizationId: 0,
          organizationAdmin: false,
        },
      },
      inOrganization(organizationId),
    );
  for (const a of ACCOUNTS.slice(0, 3))
    await seedUser(DEMO_ORGANIZATION, a.userId, a.username, a.givenName, a.familyName);
  const organizations = createGrpcClient(usersV1.OrganizationsServiceClient, usersAddress, {
    defaultDeadlineMs: 5_000,
  });
  const globexId = (await organizations.createOrganization({ name: 'Globex', alias: GLOBEX.alias })).organization!.id;
  await seedUser(globexId, GLOBEX.erin, 'erin@globex.example', 'Erin', 'Admin');
  await seedUser(globexId, GLOBEX.frank, 'frank@globex.example', 'Frank', 'Driver');
  await seedUser(globexId, GLOBEX.bob, 'bob@example.com', 'Bob', 'Globex');
  await organizations.setOrganizationAdmin(
    { userId: 'AliceAdm01', organizationAdmin: true },
    inOrganization(DEMO_ORGANIZATION),
  );
  await organizations.setOrganizationAdmin({ userId: GLOBEX.erin, organizationAdmin: true }, inOrganization(globexId));
  organizations.close();
  seedClient.close();

  const demo = (
    await groupsClient.createGroup(
      {
        displayName: 'Demo Team',
        members: [
          member('AliceAdm01', true, false),
          member('BobDriver1', false, true),
          member('Inactive01', false, true),
        ],
      },
      inOrganization(DEMO_ORGANIZATION),
    )
  ).group!.id;
  const other = (
    await groupsClient.createGroup(
      { displayName: 'Other Team', members: [member('BobDriver1', true, true)] },
      inOrganization(DEMO_ORGANIZATION),
    )
  ).group!.id;
  const globexFleet = (
    await groupsClient.createGroup(
      {
        displayName: 'Globex Fleet',
        members: [member(GLOBEX.erin, true, true), member(GLOBEX.frank, false, true)],
      },
      inOrganization(globexId),
    )
  ).group!.id;
  groupsClient.close();
  const drivesClient = createGrpcClient(drivesV1.DrivesServiceClient, drivesAddress, { defaultDeadlineMs: 5_000 });
  // The Users service's clients of the Groups and Webhooks services, as its export job uses them.
  const exportGroupsClient = createGrpcClient(groupsV1.GroupsServiceClient, wiring.address('groups'), {
    defaultDeadlineMs: 5_000,
  });
  const exportWebhooksClient = createGrpcClient(webhooksV1.WebhooksServiceClient, wiring.address('webhooks'), {
    defaultDeadlineMs: 5_000,
  });
  const makeDrive = async (userId: string, day: number, classification: drivesV1.Classification) => {
    const start = new Date(Date.UTC(2026, 9, day, 8, 0, 0));
    const { drive } = await drivesClient.createDrive(
      {
        drive: {
          id: 0,
          // The Drives service takes the organization from the call's context.
          organizationId: 0,
          userId,
          startTime: dateToTimestamp(start),
          endTime: dateToTimestamp(new Date(start.getTime() + 40 * 60_000)),
          classification,
          distance: { amount: 10 + day, units: 'mi' },
          value: { amount: 700 + day, currency: 'USD' },
          entry: drivesV1.Entry.ENTRY_AUTOMATIC,
          start: {
            name: 'Home',
            lat: '41.88',
            lon: '-87.63',
            time: dateToTimestamp(start),
            address: { country: 'US', state: 'IL', city: 'Chicago', street: '1 Main St', postalCode: '60601' },
          },
        },
      },
      inOrganization(DEMO_ORGANIZATION),
    );
    return drive!.id;
  };
  const bobBusiness: number[] = [];
  const bobPersonal: number[] = [];
  for (let day = 1; day <= 12; day++) {
    if (day % 4 === 0)
      bobPersonal.unshift(await makeDrive('BobDriver1', day, drivesV1.Classification.CLASSIFICATION_PERSONAL));
    else bobBusiness.unshift(await makeDrive('BobDriver1', day, drivesV1.Classification.CLASSIFICATION_BUSINESS));
  }
  const reportedDemo = [
    ...bobBusiness.slice(0, 5),
    await makeDrive('Inactive01', 13, drivesV1.Classification.CLASSIFICATION_BUSINESS),
  ];
  const demoCall = inOrganization(DEMO_ORGANIZATION);
  for (const id of reportedDemo) await drivesClient.reportDrive({ driveId: id, groupId: demo }, demoCall);
  await drivesClient.reviewReportedDrive(
    {
      driveId: reportedDemo[0]!,
      status: 'approved',
      comment: 'Approved for October',
      reviewerEmail: 'alice@example.com',
    },
    demoCall,
  );
  const reportedOther = [bobBusiness[6]!];
  await drivesClient.reportDrive({ driveId: reportedOther[0]!, groupId: other }, demoCall);
  const keyFile = idp.keyFile;
  const realKey = (): JWK => (JSON.parse(readFileSync(keyFile, 'utf8')) as { keys: JWK[] }).keys[0]!;

  const clients: { close(): void }[] = [];
  const recorded: RecordedResponse[] = [];
  const verifierOptions = {
    issuer: idp.issuer,
    audience: 'mileage-api',
    algorithms: ['RS256', 'PS256', 'ES256'],
    clockSkewSeconds: 30,
    userIdClaim: 'user_id',
    scopeClaim: 'scope',
    jwks: new URL(`${idp.issuer}/protocol/openid-connect/certs`),
  };
  const verifier = new TokenVerifier(verifierOptions);

  return {
    issuer: idp.issuer,
    groups: { demo, other, globexFleet },
    globexId,
    drives: { bobBusiness, bobPersonal, reportedDemo, reportedOther },
    drivesClient,
    tokenEndpoint: `${idp.issuer}/protocol/openid-connect/token`,
    usersAddress,
    groupsAddress,
    drivesAddress,
    olderDrivesAddress: `127.0.0.1:${olderDrivesServer.port}`,
    scimAddress,
    webhooksAddress,
    usersDb: db,
    async runExportJob() {
      const [job] = exportTasks(
        {
          knex: db.knex,
          store: archives,
          logger,
          scimBaseUrl: `http://127.0.0.1/scim/v2`,
          owners: [
            groupsExportOwner(exportGroupsClient),
            drivesExportOwner(drivesClient),
            webhooksExportOwner(exportWebhooksClient),
          ],
        },
        1_000,
      );
      await job!.run();
    },
    groupsDb,
    drivesDb,
    scimToken: () => scimClientToken(idp.issuer, SCIM_CLIENT_SECRET),
    app(options = {}) {
      const addresses = {
        users: options.usersAddress ?? gatewayEnv.USERS_ADDRESS!,
        groups: options.groupsAddress ?? gatewayEnv.GROUPS_ADDRESS!,
        drives: options.drivesAddress ?? gatewayEnv.DRIVES_ADDRESS!,
        scim: options.scimAddress ?? gatewayEnv.SCIM_ADDRESS!,
        webhooks: options.webhooksAddress ?? gatewayEnv.WEBHOOKS_ADDRESS!,
      };
      // Wired as in main.ts: a service whose health check fails makes its calls fail fast.
      const dependencies = gatewayDependencies({
        addresses,
        ...(options.dependencyIntervalMs ? { intervalMs: options.dependencyIntervalMs } : {}),
      });
      dependencies.monitor.start();
      const metrics = options.metrics ?? new Metrics('gateway');
      const breaker = options.circuitBreaker ? { circuitBreaker: options.circuitBreaker, metrics, logger } : {};
      const clientOf = <C extends grpc.Client>(
        Client: GeneratedClientConstructor<C>,
        name: keyof typeof addresses,
        defaultDeadlineMs: number,
        circuit: typeof breaker = breaker,
      ) =>
        createGrpcClient(Client, addresses[name], {
          defaultDeadlineMs: options.deadlineMs ?? defaultDeadlineMs,
          available: () => dependencies.monitor.isUp(name),
          ...circuit,
        });
      const users = clientOf(usersV1.UsersServiceClient, 'users', 5_000);
      const organizations = clientOf(usersV1.OrganizationsServiceClient, 'users', 5_000);
      const groups = clientOf(groupsV1.GroupsServiceClient, 'groups', 5_000);
      const drives = clientOf(drivesV1.DrivesServiceClient, 'drives', 5_000);
      const scim = clientOf(scimV1.ScimServiceClient, 'scim', 10_000);
      const webhooks = clientOf(webhooksV1.WebhooksServiceClient, 'webhooks', 5_000, {});
      clients.push(users, organizations, groups, drives, scim, webhooks, dependencies);
      const inner = createApp({
        issuer: idp.issuer,
        logger: options.logger ?? logger,
        metrics,
        verifier: options.invalidTokenLimit
          ? new TokenVerifier({ ...verifierOptions, invalidTokenLimit: options.invalidTokenLimit })
          : verifier,
        rateLimits: new RateLimits({
          ...(options.redis ? { redis: options.redis } : {}),
          ...(options.rateLimitPrefix ? { keyPrefix: options.rateLimitPrefix } : {}),
          ...(options.rateLimitMultiplier ? { multiplier: options.rateLimitMultiplier } : {}),
        }),
        users,
        organizations,
        // As the wiring binds it: mileage-scim acts for the demo organization.
        credentials: new OrganizationCredentials({
          organizations,
          clientOrganizations: parseClientOrganizations(gatewayEnv.SCIM_CLIENT_ORGANIZATIONS!),
          ...(options.scimTokenCacheSeconds !== undefined ? { tokenCacheSeconds: options.scimTokenCacheSeconds } : {}),
          ...(options.revocations ? { revocations: options.revocations } : {}),
        }),
        groups,
        drives: options.observeDrives ? options.observeDrives(drives) : drives,
        scim,
        webhooks,
        ...(options.shares ? { shares: options.shares } : {}),
        cursorSecret: options.cursorSecret ?? gatewayEnv.CURSOR_SECRET!,
        ...(options.cursorSecretPrevious ? { cursorSecretPrevious: options.cursorSecretPrevious } : {}),
        actorAttestationSecret: options.actorAttestationSecret ?? gatewayEnv.ACTOR_ATTESTATION_SECRET!,
        bodyLimitBytes: 1_048_576,
        readiness: (): Readiness => ({
          ready: verifier.keysLoaded(),
          checks: { signing_keys: verifier.keysLoaded(), accepting: true },
        }),
        dependencies: () => dependencies.monitor.report(),
      });
      if (options.unrecorded) return inner;
      // Every response is recorded for the contract check in close().
      const outer = express();
      outer.use(recordResponses(recorded));
      outer.use(inner);
      return outer;
    },
    async token(username, scope) {
      const account = ACCOUNTS.find((a) => a.username === username);
      if (!account) throw new Error(`no test account ${username}`);
      return passwordToken(idp.issuer, { username, password: account.password, scope });
    },
    async signWithRealKey(claims, options = {}) {
      const jwk = realKey();
      const key = await importJWK(jwk, 'RS256');
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({
        iss: idp.issuer,
        aud: 'mileage-api',
        sub: 'test-subject',
        typ: 'Bearer',
        azp: 'mileage-dev',
        iat: now,
        ...claims,
      })
        .setProtectedHeader({ alg: 'RS256', kid: jwk.kid!, typ: 'JWT' })
        .setExpirationTime(options.expiresIn ?? '5m')
        .sign(key);
    },
    realKey,
    async close() {
      for (const c of clients) c.close();
      const problems = checkAgainstOpenApi(openApiDocument({ issuer: idp.issuer }) as never, recorded);
      await idp.close();
      await scimServer.shutdown(1_000);
      scimUsers.close();
      scimGroups.close();
      drivesGroups.close();
      await webhooksServer.shutdown(1_000);
      webhooksGroups.close();
      await webhooksDb.close();
      await usersServer.shutdown(1_000);
      await groupsServer.shutdown(1_000);
      drivesClient.close();
      exportWebhooksClient.close();
      exportGroupsClient.close();
      await drivesServer.shutdown(1_000);
      await olderDrivesServer.shutdown(1_000);
      await drivesDb.close();
      await db.close();
      await groupsDb.close();
      await testDb.drop();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(archiveDir, { recursive: true, force: true });
      if (problems.length)
        throw new Error(`responses that do not match the OpenAPI document:\n  ${problems.join('\n  ')}`);
    },
    recorded,
  };
}

/**
 * A suite that watches the spans of its requests: tracing with an in-memory exporter (per process; node --test gives
 * each file its own), then the harness and a users_read token of Alice, both started before the suite and closed after.
 */
export function tracedSuite(name: string, sampling: Record<string, string>) {
  const exporter = new InMemorySpanExporter();
  const tracing = startTracing(name, { OTEL_TRACES_EXPORTER: 'otlp', ...sampling }, { spanExporter: exporter });
  const suite = { exporter, h: undefined as unknown as Harness, token: '' };
  before(async () => {
    suite.h = await startHarness();
    suite.token = await suite.h.token('alice@example.com', 'users_read');
  });
  after(async () => {
    await suite.h.close();
    await tracing.shutdown();
  });
  return suite;
}

/** The SCIM 2.0 URNs (RFC 7643, RFC 7644) written out, so the tests check the service's spelling of them. */
export const SCIM_URN = {
  CORE_USER: 'urn:ietf:params:scim:schemas:core:2.0:User',
  ENTERPRISE: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
  CORE_GROUP: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  PATCH_OP: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  LIST: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  ERROR: 'urn:ietf:params:scim:api:messages:2.0:Error',
} as const;

/** A SCIM test file's harness: started before its tests with the identity provider's SCIM token, closed after. */
export function scimSuite() {
  const suite = { h: undefined as unknown as Harness, app: undefined as unknown as Express, token: '' };
  before(async () => {
    suite.h = await startHarness();
    suite.app = suite.h.app();
    suite.token = await suite.h.scimToken();
  });
  after(() => suite.h.close());
  return suite;
}
