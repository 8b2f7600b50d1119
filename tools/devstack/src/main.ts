// `npm start`: the whole system on one machine with embedded defaults (CONTRACT §6).
import { openDatabase as openDrivesDatabase } from '@mileage/drives';
import { openDatabase as openGroupsDatabase } from '@mileage/groups';
import { drivesV1, groupsV1, usersV1 } from '@mileage/proto';
import { createGrpcClient, createLogger, HealthClient, loadConfigOrExit, type Database } from '@mileage/runtime';
import { openDatabase as openUsersDatabase } from '@mileage/users';
import { openDatabase as openWebhooksDatabase } from '@mileage/webhooks';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { z } from 'zod';
import { DEMO_PASSWORD, DEMO_USERS, demoUserName } from './demo-data';
import {
  loadSecrets,
  provisionServiceRoles,
  saveSecrets,
  startEmbeddedPostgres,
  type EmbeddedDatabase,
} from './postgres';
import { checkDataDir, checkPorts, checkPostmasterPid, StartupProblem, type PortUse } from './preflight';
import { httpOk, startProcess, stopProcess, waitUntilReady, type ManagedProcess } from './processes';
import { seedDemoData } from './seed';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const port = (fallback: number) => z.coerce.number().int().min(1).max(65535).default(fallback);

const config = loadConfigOrExit(
  z.object({
    DATA_DIR: z.string().default(path.join(ROOT, '.data')),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL')
      .optional(),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'expected a redis:// URL')
      .optional(),
    EMBEDDED_POSTGRES_PORT: port(54329),
    GATEWAY_PORT: port(8080),
    GATEWAY_METRICS_PORT: port(9460),
    DEV_IDP_PORT: port(8081),
    USERS_GRPC_PORT: port(50051),
    USERS_METRICS_PORT: port(9461),
    GROUPS_GRPC_PORT: port(50052),
    GROUPS_METRICS_PORT: port(9462),
    DRIVES_GRPC_PORT: port(50053),
    DRIVES_METRICS_PORT: port(9463),
    SCIM_GRPC_PORT: port(50054),
    SCIM_METRICS_PORT: port(9464),
    WEBHOOKS_GRPC_PORT: port(50055),
    WEBHOOKS_METRICS_PORT: port(9465),
    SCIM_CLIENT_SECRET: z.string().min(8).default('scim-dev-secret'),
    /** A real identity provider (e.g. Keycloak's realm URL) instead of the development one, which is then not started. */
    OIDC_ISSUER: z.url().optional(),
    LOG_LEVEL: z.string().default('info'),
  }),
);

/** The gRPC services of the stack, in start order. */
const SERVICES: {
  name: 'users' | 'groups' | 'drives' | 'scim' | 'webhooks';
  grpcPort: number;
  metricsPort: number;
  /** The service's database; none for the SCIM service. */
  open?(url: string): Database;
}[] = [
  {
    name: 'users',
    grpcPort: config.USERS_GRPC_PORT,
    metricsPort: config.USERS_METRICS_PORT,
    open: (url) => openUsersDatabase({ url }),
  },
  {
    name: 'groups',
    grpcPort: config.GROUPS_GRPC_PORT,
    metricsPort: config.GROUPS_METRICS_PORT,
    open: (url) => openGroupsDatabase({ url }),
  },
  {
    name: 'drives',
    grpcPort: config.DRIVES_GRPC_PORT,
    metricsPort: config.DRIVES_METRICS_PORT,
    open: (url) => openDrivesDatabase({ url }),
  },
  {
    name: 'scim',
    grpcPort: config.SCIM_GRPC_PORT,
    metricsPort: config.SCIM_METRICS_PORT,
  },
  {
    name: 'webhooks',
    grpcPort: config.WEBHOOKS_GRPC_PORT,
    metricsPort: config.WEBHOOKS_METRICS_PORT,
    open: (url) => openWebhooksDatabase({ url }),
  },
];

const logger = createLogger({ service: 'devstack', level: config.LOG_LEVEL });
const processes: ManagedProcess[] = [];
let database: EmbeddedDatabase | undefined;
let stopping = false;

/** Every part that could not start, one line each, before anything is started. */
async function preflight(): Promise<StartupProblem[]> {
  const problems: StartupProblem[] = [];
  const dataDirProblem = checkDataDir(config.DATA_DIR);
  if (dataDirProblem) problems.push(dataDirProblem);
  else if (!config.DATABASE_URL) {
    const pidProblem = checkPostmasterPid(path.join(config.DATA_DIR, 'postgres'), (m) => logger.warn(m));
    if (pidProblem) problems.push(pidProblem);
  }
  const ports: PortUse[] = [
    ...(config.DATABASE_URL
      ? []
      : [{ part: 'embedded PostgreSQL', port: config.EMBEDDED_POSTGRES_PORT, variable: 'EMBEDDED_POSTGRES_PORT' }]),
    ...(config.OIDC_ISSUER
      ? []
      : [{ part: 'development identity provider', port: config.DEV_IDP_PORT, variable: 'DEV_IDP_PORT' }]),
    ...SERVICES.flatMap((s) => [
      { part: `${s.name} service (gRPC)`, port: s.grpcPort, variable: `${s.name.toUpperCase()}_GRPC_PORT` },
      { part: `${s.name} service metrics`, port: s.metricsPort, variable: `${s.name.toUpperCase()}_METRICS_PORT` },
    ]),
    { part: 'gateway', port: config.GATEWAY_PORT, variable: 'GATEWAY_PORT' },
    { part: 'gateway metrics', port: config.GATEWAY_METRICS_PORT, variable: 'GATEWAY_METRICS_PORT' },
  ];
  problems.push(...(await checkPorts(ports)));
  return problems;
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  const problems = await preflight();
  if (problems.length > 0) {
    for (const problem of problems) process.stderr.write(`${problem.message}\n`);
    process.exit(1);
  }
  let adminUrl: string;
  // Per service with a database: the schema owner's URL (migrations), the runtime role's URL (the service) and that
  // role's name.
  const urls: Record<string, { owner: string; runtime: string; runtimeRole?: string }> = {};
  const withDatabase = SERVICES.filter((s) => s.open);
  if (config.DATABASE_URL) {
    // A database of your own: one URL does both (its role owns the schemas it creates).
    adminUrl = config.DATABASE_URL;
    for (const s of withDatabase) urls[s.name] = { owner: config.DATABASE_URL, runtime: config.DATABASE_URL };
  } else {
    database = await startEmbeddedPostgres({
      dataDir: config.DATA_DIR,
      port: config.EMBEDDED_POSTGRES_PORT,
      log: (m) => logger.warn(m),
    }).catch((err: unknown) => {
      throw new StartupProblem(
        'embedded PostgreSQL',
        `did not start (${describe(err)})`,
        `read the postgres lines above; its files are in ${path.join(config.DATA_DIR, 'postgres')}`,
      );
    });
    const roles = await provisionServiceRoles(
      database.adminUrl,
      config.DATA_DIR,
      withDatabase.map((s) => s.name),
    );
    adminUrl = database.adminUrl;
    for (const s of withDatabase) {
      const { owner, runtime } = roles[s.name]!;
      urls[s.name] = {
        owner: database.urlFor(owner.role, owner.password),
        runtime: database.urlFor(runtime.role, runtime.password),
        runtimeRole: runtime.role,
      };
    }
    logger.info(
      { port: config.EMBEDDED_POSTGRES_PORT, data_dir: path.join(config.DATA_DIR, 'postgres') },
      'embedded PostgreSQL running',
    );
  }
  for (const s of withDatabase) {
    const { owner, runtimeRole } = urls[s.name]!;
    const db = s.open!(owner);
    const { applied, grantedTo } = await db.migrate(runtimeRole ? { runtimeRole } : {}).finally(() => db.close());
    logger.info({ target: s.name, applied, granted_to: grantedTo }, 'migrations up to date');
  }
  // Page cursors stay valid across restarts of the development stack.
  const secrets = loadSecrets(config.DATA_DIR);
  if (!secrets.cursorSecret || !secrets.actorAttestationSecret || !secrets.webhooksSecretKey) {
    secrets.cursorSecret ??= randomBytes(32).toString('base64url');
    secrets.actorAttestationSecret ??= randomBytes(32).toString('base64url');
    secrets.webhooksSecretKey ??= randomBytes(32).toString('base64url');
    saveSecrets(config.DATA_DIR, secrets);
  }

  const common = { LOG_LEVEL: config.LOG_LEVEL };
  const issuer = config.OIDC_ISSUER?.replace(/\/$/, '') ?? `http://127.0.0.1:${config.DEV_IDP_PORT}/realms/mileage`;
  const address = (name: string) => `127.0.0.1:${SERVICES.find((s) => s.name === name)!.grpcPort}`;

  const waits: Promise<void>[] = [];
  if (config.OIDC_ISSUER) {
    logger.info({ issuer }, 'using the identity provider at OIDC_ISSUER; the development provider is not started');
    waits.push(
      httpOk(`${issuer}/.well-known/openid-configuration`)
        .catch(() => false)
        .then((ok) => {
          if (!ok) throw new Error(`no OpenID provider answers at ${issuer}`);
        }),
    );
  } else {
    const idp = startProcess(
      'dev-idp',
      path.join(ROOT, 'packages/dev-idp/dist/main.js'),
      {
        ...common,
        DEV_IDP_PORT: String(config.DEV_IDP_PORT),
        DEV_IDP_DATA_DIR: path.join(config.DATA_DIR, 'dev-idp'),
        SCIM_CLIENT_SECRET: config.SCIM_CLIENT_SECRET,
        // The gateway's /docs page signs people in; opened as 127.0.0.1 or localhost.
        DEV_IDP_DOCS_REDIRECT_URIS: ['127.0.0.1', 'localhost']
          .map((host) => `http://${host}:${config.GATEWAY_PORT}/docs/oauth2-redirect.html`)
          .join(','),
      },
      logger,
    );
    processes.push(idp);
    waits.push(waitUntilReady(idp, () => httpOk(`${issuer}/.well-known/openid-configuration`), 30_000));
  }
  const healthClients: HealthClient[] = [];
  for (const s of SERVICES) {
    const proc = startProcess(
      s.name,
      path.join(ROOT, `services/${s.name}/dist/main.js`),
      {
        ...common,
        ...(s.open && { DATABASE_URL: urls[s.name]!.runtime }),
        GRPC_ADDRESS: address(s.name),
        METRICS_PORT: String(s.metricsPort),
        // The SCIM service writes through the services that own the data.
        ...(s.name === 'scim'
          ? {
              USERS_ADDRESS: address('users'),
              GROUPS_ADDRESS: address('groups'),
              SCIM_BASE_URL: `http://127.0.0.1:${config.GATEWAY_PORT}/scim/v2`,
              ACTOR_ATTESTATION_SECRET: secrets.actorAttestationSecret,
            }
          : {}),
        // The owners of the webhook events relay their outboxes to the Webhooks service.
        ...(s.name === 'users' || s.name === 'drives' ? { WEBHOOKS_ADDRESS: address('webhooks') } : {}),
        // Webhooks to loopback receivers over http: development only (production: https and public addresses).
        ...(s.name === 'webhooks'
          ? {
              GROUPS_ADDRESS: address('groups'),
              WEBHOOKS_MODE: 'development',
              WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'loopback',
              WEBHOOKS_TARGET_PORTS: '1-65535',
              WEBHOOKS_SECRET_KEY: secrets.webhooksSecretKey!,
            }
          : {}),
      },
      logger,
    );
    processes.push(proc);
    const health = new HealthClient(address(s.name));
    healthClients.push(health);
    // Six Node.js processes start at once: on a small, busy machine that takes a while.
    waits.push(waitUntilReady(proc, () => health.check('', 1_000), 60_000));
  }
  await Promise.all(waits);
  for (const h of healthClients) h.close();

  const gateway = startProcess(
    'gateway',
    path.join(ROOT, 'gateway/dist/main.js'),
    {
      ...common,
      PORT: String(config.GATEWAY_PORT),
      METRICS_PORT: String(config.GATEWAY_METRICS_PORT),
      OIDC_ISSUER: issuer,
      USERS_ADDRESS: address('users'),
      GROUPS_ADDRESS: address('groups'),
      DRIVES_ADDRESS: address('drives'),
      SCIM_ADDRESS: address('scim'),
      WEBHOOKS_ADDRESS: address('webhooks'),
      CURSOR_SECRET: secrets.cursorSecret,
      ACTOR_ATTESTATION_SECRET: secrets.actorAttestationSecret,
      ...(config.REDIS_URL ? { REDIS_URL: config.REDIS_URL } : {}),
    },
    logger,
  );
  processes.push(gateway);
  await waitUntilReady(gateway, () => httpOk(`http://127.0.0.1:${config.GATEWAY_PORT}/readyz`), 30_000);

  const clients = {
    users: createGrpcClient(usersV1.UsersServiceClient, address('users'), { defaultDeadlineMs: 10_000 }),
    groups: createGrpcClient(groupsV1.GroupsServiceClient, address('groups'), { defaultDeadlineMs: 10_000 }),
    drives: createGrpcClient(drivesV1.DrivesServiceClient, address('drives'), { defaultDeadlineMs: 10_000 }),
  };
  const seeded = await seedDemoData({ adminUrl, ...clients }).finally(() =>
    Object.values(clients).forEach((c) => c.close()),
  );
  logger.info({ seeded }, seeded ? 'demo data seeded' : 'database already holds data; not seeding');

  for (const proc of processes) {
    void proc.exited.then((code) => {
      if (!stopping) {
        logger.error({ process: proc.name, code }, 'a process of the stack exited; stopping everything');
        void shutdown(1);
      }
    });
  }
  printBanner(issuer, Date.now() - startedAt);
}

function printBanner(issuer: string, elapsedMs: number): void {
  const gateway = `http://127.0.0.1:${config.GATEWAY_PORT}`;
  const alice = DEMO_USERS[0]!;
  const lines = [
    '',
    `Mileage platform is up (${(elapsedMs / 1000).toFixed(1)} s).`,
    `  External API    ${gateway}/v1`,
    `  SCIM 2.0        ${gateway}/scim/v2`,
    `  API console     ${gateway}/docs (Authorize, then sign in as a demo user)`,
    `  Health          ${gateway}/healthz  ${gateway}/readyz`,
    `  Identity (dev)  ${issuer}`,
    `  Webhooks        ${gateway}/v1/groups/1/webhooks (scope webhooks_manage; http and loopback targets allowed here)`,
    `  Metrics         http://127.0.0.1:${config.GATEWAY_METRICS_PORT}/metrics (gateway), ${SERVICES.map((s) => `:${s.metricsPort} (${s.name})`).join(', ')}`,
    `  Demo users      ${DEMO_USERS.map(demoUserName).join(', ')} (password "${DEMO_PASSWORD}")`,
    '',
    'Get a token and call /v1/users/me:',
    `  TOKEN=$(curl -s ${issuer}/protocol/openid-connect/token -d grant_type=password -d client_id=mileage-dev \\`,
    `      -d username=${demoUserName(alice)} -d password=${DEMO_PASSWORD} -d 'scope=users_read drives_read groups_read groups_read_reported_drives' \\`,
    `      | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).access_token')`,
    `  curl -s -H "Authorization: Bearer $TOKEN" ${gateway}/v1/users/me`,
    `  curl -s -H "Authorization: Bearer $TOKEN" ${gateway}/v1/groups/1/reported-drives?limit=5`,
    '',
    'Provision over SCIM as the identity provider would (client credentials of mileage-scim):',
    `  SCIM=$(curl -s ${issuer}/protocol/openid-connect/token -u mileage-scim:${config.SCIM_CLIENT_SECRET === 'scim-dev-secret' ? 'scim-dev-secret' : '"$SCIM_CLIENT_SECRET"'} -d grant_type=client_credentials -d scope=scim \\`,
    `      | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).access_token')`,
    `  curl -s -H "Authorization: Bearer $SCIM" '${gateway}/scim/v2/Users?filter=userName%20eq%20%22bob@example.com%22'`,
    '',
    'Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info('stopping the stack');
  // Front to back: the gateway drains first, then the services, then the identity provider and the database.
  for (const name of ['gateway', ...SERVICES.map((s) => s.name), 'dev-idp']) {
    const proc = processes.find((p) => p.name === name);
    if (proc) await stopProcess(proc, 15_000);
  }
  if (database) await database.stop().catch((err: unknown) => logger.error({ err }, 'stopping PostgreSQL failed'));
  logger.info('stopped');
  process.exit(code);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

/** An error's message, also for the non-Error values some libraries reject with. */
function describe(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'string') return err;
  return JSON.stringify(err) ?? String(err);
}

main().catch(async (err: unknown) => {
  const line = err instanceof StartupProblem ? err.message : `npm start: start-up failed: ${describe(err)}`;
  logger.error({ err }, 'start-up failed');
  process.stderr.write(`${line}\n`);
  await shutdown(1);
});
