// `npm start`: the whole system on one machine with embedded defaults (CONTRACT §6).
import { groupsV1, usersV1 } from '@mileage/proto';
import { openDatabase as openGroupsDatabase } from '@mileage/groups';
import { createGrpcClient, createLogger, HealthClient, loadConfigOrExit } from '@mileage/runtime';
import { openDatabase as openUsersDatabase } from '@mileage/users';
import * as path from 'node:path';
import { z } from 'zod';
import { DEMO_PASSWORD, DEMO_USERS, demoUserName } from './demo-data';
import { startEmbeddedPostgres, provisionServiceRoles, type EmbeddedDatabase } from './postgres';
import { httpOk, startProcess, stopProcess, waitUntilReady, type ManagedProcess } from './processes';
import { seedDemoData } from './seed';

const ROOT = path.resolve(__dirname, '..', '..', '..');

const config = loadConfigOrExit(
  z.object({
    DATA_DIR: z.string().default(path.join(ROOT, '.data')),
    DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL').optional(),
    REDIS_URL: z.string().regex(/^rediss?:\/\//, 'expected a redis:// URL').optional(),
    EMBEDDED_POSTGRES_PORT: z.coerce.number().int().min(1).max(65535).default(54329),
    GATEWAY_PORT: z.coerce.number().int().min(1).max(65535).default(8080),
    DEV_IDP_PORT: z.coerce.number().int().min(1).max(65535).default(8081),
    USERS_GRPC_PORT: z.coerce.number().int().min(1).max(65535).default(50051),
    GATEWAY_METRICS_PORT: z.coerce.number().int().min(1).max(65535).default(9460),
    USERS_METRICS_PORT: z.coerce.number().int().min(1).max(65535).default(9461),
    GROUPS_GRPC_PORT: z.coerce.number().int().min(1).max(65535).default(50052),
    GROUPS_METRICS_PORT: z.coerce.number().int().min(1).max(65535).default(9462),
    SCIM_CLIENT_SECRET: z.string().min(8).default('scim-dev-secret'),
    LOG_LEVEL: z.string().default('info'),
  }),
);

const logger = createLogger({ service: 'devstack', level: config.LOG_LEVEL });
const processes: ManagedProcess[] = [];
let database: EmbeddedDatabase | undefined;
let stopping = false;

async function main(): Promise<void> {
  const startedAt = Date.now();
  let adminUrl: string;
  let usersDbUrl: string;
  let groupsDbUrl: string;
  if (config.DATABASE_URL) {
    adminUrl = usersDbUrl = groupsDbUrl = config.DATABASE_URL;
  } else {
    database = await startEmbeddedPostgres({ dataDir: config.DATA_DIR, port: config.EMBEDDED_POSTGRES_PORT, log: (m) => logger.warn(m) });
    const roles = await provisionServiceRoles(database.adminUrl, config.DATA_DIR, ['users', 'groups']);
    adminUrl = database.adminUrl;
    usersDbUrl = database.urlFor(roles.users!.role, roles.users!.password);
    groupsDbUrl = database.urlFor(roles.groups!.role, roles.groups!.password);
    logger.info({ port: config.EMBEDDED_POSTGRES_PORT, data_dir: path.join(config.DATA_DIR, 'postgres') }, 'embedded PostgreSQL running');
  }

  for (const [target, db] of [
    ['users', openUsersDatabase({ url: usersDbUrl })],
    ['groups', openGroupsDatabase({ url: groupsDbUrl })],
  ] as const) {
    const { applied } = await db.migrate().finally(() => db.close());
    logger.info({ target, applied }, 'migrations up to date');
  }

  const common = { LOG_LEVEL: config.LOG_LEVEL };
  const usersAddress = `127.0.0.1:${config.USERS_GRPC_PORT}`;
  const issuer = `http://127.0.0.1:${config.DEV_IDP_PORT}/realms/mileage`;

  const idp = startProcess('dev-idp', path.join(ROOT, 'packages/dev-idp/dist/main.js'), {
    ...common,
    DEV_IDP_PORT: String(config.DEV_IDP_PORT),
    DEV_IDP_DATA_DIR: path.join(config.DATA_DIR, 'dev-idp'),
    SCIM_CLIENT_SECRET: config.SCIM_CLIENT_SECRET,
  }, logger);
  const users = startProcess('users', path.join(ROOT, 'services/users/dist/main.js'), {
    ...common,
    DATABASE_URL: usersDbUrl,
    GRPC_ADDRESS: usersAddress,
    METRICS_PORT: String(config.USERS_METRICS_PORT),
  }, logger);
  const groupsAddress = `127.0.0.1:${config.GROUPS_GRPC_PORT}`;
  const groups = startProcess('groups', path.join(ROOT, 'services/groups/dist/main.js'), {
    ...common,
    DATABASE_URL: groupsDbUrl,
    GRPC_ADDRESS: groupsAddress,
    METRICS_PORT: String(config.GROUPS_METRICS_PORT),
  }, logger);
  processes.push(idp, users, groups);
  const usersHealth = new HealthClient(usersAddress);
  const groupsHealth = new HealthClient(groupsAddress);
  await Promise.all([
    waitUntilReady(idp, () => httpOk(`${issuer}/.well-known/openid-configuration`), 30_000),
    waitUntilReady(users, () => usersHealth.check('', 500), 30_000),
    waitUntilReady(groups, () => groupsHealth.check('', 500), 30_000),
  ]);
  usersHealth.close();
  groupsHealth.close();

  const gateway = startProcess('gateway', path.join(ROOT, 'gateway/dist/main.js'), {
    ...common,
    PORT: String(config.GATEWAY_PORT),
    METRICS_PORT: String(config.GATEWAY_METRICS_PORT),
    OIDC_ISSUER: issuer,
    USERS_ADDRESS: usersAddress,
    GROUPS_ADDRESS: groupsAddress,
    ...(config.REDIS_URL ? { REDIS_URL: config.REDIS_URL } : {}),
  }, logger);
  processes.push(gateway);
  await waitUntilReady(gateway, () => httpOk(`http://127.0.0.1:${config.GATEWAY_PORT}/readyz`), 30_000);

  const usersClient = createGrpcClient(usersV1.UsersServiceClient, usersAddress, { defaultDeadlineMs: 10_000 });
  const groupsClient = createGrpcClient(groupsV1.GroupsServiceClient, groupsAddress, { defaultDeadlineMs: 10_000 });
  const seeded = await seedDemoData({ adminUrl, users: usersClient, groups: groupsClient }).finally(() => {
    usersClient.close();
    groupsClient.close();
  });
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
    `  Health          ${gateway}/healthz  ${gateway}/readyz`,
    `  Identity (dev)  ${issuer}`,
    `  Metrics         http://127.0.0.1:${config.GATEWAY_METRICS_PORT}/metrics (gateway), :${config.USERS_METRICS_PORT} (users), :${config.GROUPS_METRICS_PORT} (groups)`,
    `  Demo users      ${DEMO_USERS.map(demoUserName).join(', ')} (password "${DEMO_PASSWORD}")`,
    '',
    'Get a token and call /v1/users/me:',
    `  TOKEN=$(curl -s ${issuer}/protocol/openid-connect/token -d grant_type=password -d client_id=mileage-dev \\`,
    `      -d username=${demoUserName(alice)} -d password=${DEMO_PASSWORD} -d 'scope=users_read drives_read groups_read groups_read_reported_drives' \\`,
    `      | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).access_token')`,
    `  curl -s -H "Authorization: Bearer $TOKEN" ${gateway}/v1/users/me`,
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
  const order = ['gateway', 'users', 'groups', 'dev-idp'];
  for (const name of order) {
    const proc = processes.find((p) => p.name === name);
    if (proc) await stopProcess(proc, 15_000);
  }
  if (database) await database.stop().catch((err: unknown) => logger.error({ err }, 'stopping PostgreSQL failed'));
  logger.info('stopped');
  process.exit(code);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

main().catch(async (err: unknown) => {
  logger.error({ err }, 'start-up failed');
  await shutdown(1);
});
