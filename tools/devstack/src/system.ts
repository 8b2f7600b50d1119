// The whole-system harness's shared steps: the databases of a stack (roles and migrations, as the chart's Jobs do) and
// its wiring on free ports. `npm start`, the bench, the chaos suite, the images stack and the gateway's tests assemble
// the system with these and wireStack; each starts the processes its own way (docs/architecture.md, "How the system
// is assembled").
import { freePort } from '@mileage/runtime/config';
import { provisionServiceRoles, type ServiceRoles } from './postgres';
import { migrateServices, withDatabase, type Env, type ServiceName, type StackPlan } from './wiring';

/** What a stack's databases need of a PostgreSQL server: its superuser's URL and a role's URL on it. */
export interface PostgresServer {
  adminUrl: string;
  urlFor(role: string, password: string): string;
}

/** Each service's two roles (ServiceRoles) and their URLs on the server. */
export type ServiceDatabases = Partial<
  Record<ServiceName, { roles: ServiceRoles; urls: { owner: string; runtime: string } }>
>;

/**
 * Per service with a database: a schema owned by its owner role and a runtime role that owns nothing
 * (provisionServiceRoles, passwords kept in `dir`), then its migrations as the owner (migrateServices).
 */
export async function prepareDatabases(
  postgres: PostgresServer,
  dir: string,
  services: readonly ServiceName[],
  migrationEnv: Env = {},
): Promise<ServiceDatabases> {
  const databaseServices = withDatabase(services);
  const roles = await provisionServiceRoles(postgres.adminUrl, dir, databaseServices);
  const databases: ServiceDatabases = {};
  for (const s of databaseServices) {
    const { owner, runtime } = roles[s]!;
    databases[s] = {
      roles: roles[s]!,
      urls: {
        owner: postgres.urlFor(owner.role, owner.password),
        runtime: postgres.urlFor(runtime.role, runtime.password),
      },
    };
  }
  await migrateServices(Object.fromEntries(Object.entries(databases).map(([s, d]) => [s, d.urls])), migrationEnv);
  return databases;
}

/** The runtime role's URL of each service of `databases`: a plan's databaseUrls. */
export const runtimeUrls = (databases: ServiceDatabases): StackPlan['databaseUrls'] =>
  Object.fromEntries(Object.entries(databases).map(([s, d]) => [s, d.urls.runtime]));

/** The ports of a plan, free ones: a gRPC port per service (shared by its replicas), a metrics port per replica. */
export async function freePlanPorts(
  services: readonly ServiceName[],
  replicas: number,
): Promise<Pick<StackPlan, 'grpcPorts' | 'metricsPorts' | 'gatewayPort'> & { idpPort: number }> {
  const ports = (n: number) => Promise.all(Array.from({ length: n }, () => freePort()));
  const grpcPorts: StackPlan['grpcPorts'] = {};
  const metricsPorts: StackPlan['metricsPorts'] = {};
  for (const s of services) grpcPorts[s] = await freePort();
  for (const name of ['gateway', ...services] as const) metricsPorts[name] = await ports(replicas);
  return { grpcPorts, metricsPorts, gatewayPort: await freePort(), idpPort: await freePort() };
}
