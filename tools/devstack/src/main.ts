// `npm start`: the whole system on one machine with embedded defaults (CONTRACT §6).
import { drivesV1, groupsV1, usersV1 } from '@mileage/proto';
import { createGrpcClient, grpcTls, HealthClient } from '@mileage/runtime/grpc';
import { createLogger, logWritten } from '@mileage/runtime/telemetry';
import { loadConfigOrExit } from '@mileage/runtime/config';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { z } from 'zod';
import { DEMO_ORGANIZATIONS, DEMO_PASSWORD, DEMO_SCIM_CLIENTS, type DemoOrganization } from './demo-data';
import { startPostgres, type RunningPostgres } from './embedded-postgres';
import { loadSecrets, saveSecrets } from './postgres';
import { checkDataDir, checkPorts, checkPostmasterPid, StartupProblem, type PortUse } from './preflight';
import { httpOk, httpReady, startProcess, stopProcess, waitUntilReady, type ManagedProcess } from './processes';
import { seedDemoData } from './seed';
import { prepareDatabases, runtimeUrls } from './system';
import {
  developmentPki,
  migrateServices,
  ROOT,
  scriptOf,
  SERVICE_NAMES,
  wireStack,
  withDatabase,
  type ServiceName,
  type StackPlan,
} from './wiring';

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
    SCIM_CLIENT_SECRET: z.string().min(8).default(DEMO_SCIM_CLIENTS.demo.secret),
    /** A real identity provider (e.g. Keycloak's realm URL) instead of the development one, which is then not started. */
    OIDC_ISSUER: z.url().optional(),
    LOG_LEVEL: z.string().default('info'),
    /**
     * The development switch: the gRPC hop in plaintext instead of mutual TLS with the stack's own CA (made anew at
     * each start in DATA_DIR/grpc-pki). Every process then logs that it is plaintext.
     */
    GRPC_PLAINTEXT: z.enum(['true', 'false']).default('false'),
  }),
);

/** The gRPC services of the stack, in start order, and their ports. */
const SERVICES = SERVICE_NAMES.map((name) => {
  const prefix = name.toUpperCase() as Uppercase<ServiceName>;
  return { name, grpcPort: config[`${prefix}_GRPC_PORT`], metricsPort: config[`${prefix}_METRICS_PORT`] };
});

const logger = createLogger({ service: 'devstack', level: config.LOG_LEVEL });
const processes: ManagedProcess[] = [];
let database: RunningPostgres | undefined;
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
  // The runtime role's URL of each service with a database (its migrations run as the schema's owner).
  let databaseUrls: StackPlan['databaseUrls'];
  const databaseServices = withDatabase(SERVICE_NAMES);
  if (config.DATABASE_URL) {
    // A database of your own: one URL does both (its role owns the schemas it creates).
    const url = config.DATABASE_URL;
    adminUrl = url;
    const urls = Object.fromEntries(databaseServices.map((s) => [s, { owner: url, runtime: url }]));
    await migrateServices(urls, { LOG_LEVEL: config.LOG_LEVEL });
    databaseUrls = Object.fromEntries(databaseServices.map((s) => [s, url]));
  } else {
    database = await startPostgres({
      dir: config.DATA_DIR,
      port: config.EMBEDDED_POSTGRES_PORT,
      password: loadSecrets(config.DATA_DIR).postgresPassword,
      persistent: true,
      log: (m) => logger.warn(m),
      onPostgresError: (m) => logger.warn(`postgres: ${m}`),
    }).catch((err: unknown) => {
      throw new StartupProblem(
        'embedded PostgreSQL',
        `did not start (${describe(err)})`,
        `read the postgres lines above; its files are in ${path.join(config.DATA_DIR, 'postgres')}`,
      );
    });
    adminUrl = database.adminUrl;
    logger.info({ port: config.EMBEDDED_POSTGRES_PORT, data_dir: database.dataDir }, 'embedded PostgreSQL running');
    const databases = await prepareDatabases(database, config.DATA_DIR, SERVICE_NAMES, { LOG_LEVEL: config.LOG_LEVEL });
    databaseUrls = runtimeUrls(databases);
  }
  logger.info({ targets: databaseServices }, 'migrations up to date');
  // Page cursors stay valid across restarts of the development stack.
  const secrets = loadSecrets(config.DATA_DIR);
  const made = !secrets.cursorSecret || !secrets.actorAttestationSecret || !secrets.webhooksSecretKey;
  const key = () => randomBytes(32).toString('base64url');
  const stackSecrets = {
    cursor: (secrets.cursorSecret ??= key()),
    actorAttestation: (secrets.actorAttestationSecret ??= key()),
    webhooksKey: (secrets.webhooksSecretKey ??= key()),
  };
  if (made) saveSecrets(config.DATA_DIR, secrets);

  // The hop is mutual TLS, as installed: a CA of this stack's own, made anew at each start (its certificates are for
  // loopback), and a certificate per component; `npm run org` finds the operator's in the same folder.
  const grpc =
    config.GRPC_PLAINTEXT === 'true'
      ? { plaintext: true as const }
      : { pki: await developmentPki(path.join(config.DATA_DIR, 'grpc-pki'), ['127.0.0.1']) };
  const wiring = wireStack({
    services: SERVICE_NAMES,
    grpc,
    hosts: ['127.0.0.1'],
    grpcPorts: Object.fromEntries(SERVICES.map((s) => [s.name, s.grpcPort])),
    metricsPorts: {
      gateway: [config.GATEWAY_METRICS_PORT],
      ...Object.fromEntries(SERVICES.map((s) => [s.name, [s.metricsPort]])),
    },
    gatewayPort: config.GATEWAY_PORT,
    identity: config.OIDC_ISSUER
      ? { issuer: config.OIDC_ISSUER }
      : {
          port: config.DEV_IDP_PORT,
          dataDir: path.join(config.DATA_DIR, 'dev-idp'),
          scimClientSecret: config.SCIM_CLIENT_SECRET,
        },
    databaseUrls,
    secrets: stackSecrets,
    ...(config.REDIS_URL ? { redisUrl: config.REDIS_URL } : {}),
    extra: {
      all: { LOG_LEVEL: config.LOG_LEVEL },
      // Organization exports' archives (the Users service writes and serves them): local disk on one machine.
      services: { EXPORT_ARCHIVE_DIR: path.join(config.DATA_DIR, 'archives') },
    },
  });
  const { issuer, address } = wiring;

  const waits: Promise<void>[] = [];
  if (!wiring.idp) {
    logger.info({ issuer }, 'using the identity provider at OIDC_ISSUER; the development provider is not started');
    waits.push(
      httpOk(`${issuer}/.well-known/openid-configuration`)
        .catch(() => false)
        .then((ok) => {
          if (!ok) throw new Error(`no OpenID provider answers at ${issuer}`);
        }),
    );
  } else {
    const idp = startProcess('dev-idp', scriptOf('dev-idp'), wiring.idp, logger);
    processes.push(idp);
    waits.push(waitUntilReady(idp, () => httpReady(`${issuer}/.well-known/openid-configuration`), 60_000));
  }
  const healthClients: HealthClient[] = [];
  // The demo data is written as `seed`: the one identity the write methods without an installed caller admit.
  const seedCredentials = grpcTls(wiring.grpcConfig('seed')).channelCredentials();
  const seedOptions = { defaultDeadlineMs: 10_000, credentials: seedCredentials };
  for (const s of SERVICE_NAMES) {
    const proc = startProcess(s, scriptOf(s), wiring.services[s]![0]!, logger);
    processes.push(proc);
    const health = new HealthClient(address(s), seedCredentials);
    healthClients.push(health);
    // Six Node.js processes start at once: on a small, busy machine that takes a while.
    waits.push(waitUntilReady(proc, () => health.check('', 1_000), 60_000));
  }
  await Promise.all(waits);
  for (const h of healthClients) h.close();

  const gateway = startProcess('gateway', scriptOf('gateway'), wiring.gateways[0]!, logger);
  processes.push(gateway);
  await waitUntilReady(gateway, () => httpReady(`${wiring.gatewayUrl()}/readyz`), 30_000);

  const clients = {
    users: createGrpcClient(usersV1.UsersServiceClient, address('users'), seedOptions),
    organizations: createGrpcClient(usersV1.OrganizationsServiceClient, address('users'), seedOptions),
    groups: createGrpcClient(groupsV1.GroupsServiceClient, address('groups'), seedOptions),
    drives: createGrpcClient(drivesV1.DrivesServiceClient, address('drives'), seedOptions),
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
  const tokenUrl = `${issuer}/protocol/openid-connect/token`;
  const accessToken = `| node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).access_token')`;
  const [demo, globex] = DEMO_ORGANIZATIONS as [DemoOrganization, DemoOrganization];
  const scimSecret =
    config.SCIM_CLIENT_SECRET === DEMO_SCIM_CLIENTS.demo.secret
      ? DEMO_SCIM_CLIENTS.demo.secret
      : '"$SCIM_CLIENT_SECRET"';
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
    `  Organizations   ${DEMO_ORGANIZATIONS.map(describeOrganization).join('\n                  ')}`,
    `                  (password "${DEMO_PASSWORD}"; npm run org -- create|admin … manages organizations)`,
    '',
    'Get a token and call /v1/users/me:',
    `  TOKEN=$(curl -s ${tokenUrl} -d grant_type=password -d client_id=mileage-dev \\`,
    `      -d username=${demo.users[0]!.userName} -d password=${DEMO_PASSWORD} -d 'scope=users_read drives_read groups_read groups_read_reported_drives' \\`,
    `      ${accessToken}`,
    `  curl -s -H "Authorization: Bearer $TOKEN" ${gateway}/v1/users/me`,
    `  curl -s -H "Authorization: Bearer $TOKEN" ${gateway}/v1/groups/1/reported-drives?limit=5`,
    '',
    `Provision over SCIM as an identity provider would: ${demo.name} with ${DEMO_SCIM_CLIENTS.demo.clientId} (bound by SCIM_CLIENT_ORGANIZATIONS),`,
    `${globex.name} with ${DEMO_SCIM_CLIENTS.globex.clientId} (its tokens carry "org_id": "${globex.alias}"); each sees only its own people:`,
    `  SCIM=$(curl -s ${tokenUrl} -u ${DEMO_SCIM_CLIENTS.demo.clientId}:${scimSecret} -d grant_type=client_credentials -d scope=scim \\`,
    `      ${accessToken}`,
    `  curl -s -H "Authorization: Bearer $SCIM" '${gateway}/scim/v2/Users?filter=userName%20eq%20%22bob@example.com%22'`,
    `  GLOBEX=$(curl -s ${tokenUrl} -u ${DEMO_SCIM_CLIENTS.globex.clientId}:${DEMO_SCIM_CLIENTS.globex.secret} -d grant_type=client_credentials -d scope=scim \\`,
    `      ${accessToken}`,
    `  curl -s -H "Authorization: Bearer $GLOBEX" '${gateway}/scim/v2/Users?filter=userName%20eq%20%22bob@example.com%22'`,
    '',
    `Mint a SCIM secret token (what Entra ID and Okta take) as ${globex.name}'s organization admin; it is shown once:`,
    `  ADMIN=$(curl -s ${tokenUrl} -d grant_type=password -d client_id=mileage-dev \\`,
    `      -d username=${globex.users[0]!.userName} -d password=${DEMO_PASSWORD} -d scope=organization_manage ${accessToken}`,
    `  curl -s -X POST -H "Authorization: Bearer $ADMIN" -H 'content-type: application/json' -d '{"name": "Entra ID"}' \\`,
    `      ${gateway}/v1/organization/scim-tokens`,
    `  curl -s -H "Authorization: Bearer mscim_…" ${gateway}/scim/v2/Users   # the "token" of the answer`,
    '',
    'Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

/** "Demo Org (demo): alice@example.com (organization admin), …; bob@example.com provisioned only". */
function describeOrganization(organization: DemoOrganization): string {
  const people = organization.users.map(
    (u) =>
      `${u.userName}${organization.organizationAdmins.includes(u.id) ? ' (organization admin)' : ''}${u.signsIn ? '' : ' (provisioned only)'}`,
  );
  return `${organization.name} (${organization.alias}): ${people.join(', ')}`;
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
  await logWritten(logger);
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
