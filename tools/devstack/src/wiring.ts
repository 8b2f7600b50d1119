// The one wiring of a whole stack: which process is told which address, database and secret. `npm start`, the bench
// and the chaos suite each give their ports, replicas and options, and start the processes with what this yields.
import { componentFiles, writeDevelopmentPki, type DevelopmentPki } from '@mileage/pki';
import { callGraph, COMPONENTS, type GrpcTlsConfig } from '@mileage/runtime/grpc';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { DEMO_CLIENT_ORGANIZATIONS } from './demo-data';

export const SERVICE_NAMES = ['users', 'groups', 'drives', 'scim', 'webhooks'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/**
 * The services that keep data in PostgreSQL (a schema, its two roles, migrations, DATABASE_URL), in the order their
 * migrations run. SCIM has none: it reads and writes through Users and Groups.
 */
export const DATABASE_SERVICES: readonly ServiceName[] = ['users', 'groups', 'drives', 'webhooks'];

/**
 * Whom each process calls: it is given those services' addresses (of the ones the stack runs), in SERVICE_NAMES'
 * order. Derived from every RPC's callers in its .proto (callGraph).
 */
const CALLS: Readonly<Record<ServiceName | 'gateway', readonly ServiceName[]>> = (() => {
  const graph = callGraph();
  return Object.fromEntries(
    (['gateway', ...SERVICE_NAMES] as const).map((caller) => [
      caller,
      SERVICE_NAMES.filter((s) => graph[caller].includes(s)),
    ]),
  ) as Record<ServiceName | 'gateway', ServiceName[]>;
})();

export const ROOT = path.resolve(__dirname, '..', '..', '..');
/** The entry point of a process of the stack, from its build output. */
export const scriptOf = (name: ServiceName | 'gateway' | 'dev-idp'): string =>
  path.join(
    ROOT,
    name === 'gateway'
      ? 'gateway/dist/main.js'
      : name === 'dev-idp'
        ? 'packages/dev-idp/dist/main.js'
        : `services/${name}/dist/main.js`,
  );

export type Env = Record<string, string>;

/** The SPIFFE prefix of the stacks on one machine: `…/sa/mileage-gateway` is the gateway. */
export const DEVELOPMENT_SPIFFE_PREFIX = 'spiffe://mileage.local/ns/development/sa/mileage-';

/**
 * A fresh development PKI in `dir` (the stack's own CA, thrown away with it): one certificate per component, `seed`
 * (the demo-data loader) and `operator` (`npm run org`) included, for the loopback addresses the stack listens on.
 */
export function developmentPki(dir: string, hosts: readonly string[]): Promise<DevelopmentPki> {
  return writeDevelopmentPki(dir, { spiffePrefix: DEVELOPMENT_SPIFFE_PREFIX, components: COMPONENTS, hosts });
}

/** The development identity provider's part of a plan. */
export interface DevIdpPlan {
  port: number;
  dataDir: string;
  scimClientSecret: string;
  /** Sign-in accounts other than the demo users (a JSON file of { username, password, userId }). */
  accountsFile?: string;
  accessTokenTtlSeconds?: number;
}

export interface StackPlan {
  /** The gRPC services that run (the gateway is given the addresses of these only). */
  services: readonly ServiceName[];
  /** One loopback address per replica: replica i of every service and gateway listens on hosts[i], on shared ports. */
  hosts: readonly string[];
  grpcPorts: Partial<Record<ServiceName, number>>;
  /** The /metrics port of each replica (index as in hosts) of each process. */
  metricsPorts: Partial<Record<ServiceName | 'gateway', readonly number[]>>;
  gatewayPort: number;
  /** The development identity provider, or the issuer of a real one (the development one then does not run). */
  identity: DevIdpPlan | { issuer: string };
  /** The runtime role's URL of each service with a database. */
  databaseUrls: Partial<Record<ServiceName, string>>;
  secrets: { cursor: string; actorAttestation: string; webhooksKey?: string };
  /**
   * The gRPC hop: mutual TLS with a development PKI (developmentPki: each process its component's certificate), or
   * plaintext (GRPC_PLAINTEXT, which every process logs as an error) where a harness measures without TLS.
   */
  grpc: { pki: DevelopmentPki } | { plaintext: true };
  redisUrl?: string;
  /**
   * Where the Webhooks service may deliver: loopback receivers over http on any port (the default: a stack on one
   * machine), or public https targets only, as installed (the images stack).
   */
  webhookTargets?: 'loopback' | 'public';
  /** Extra variables of every process, of every service replica, and of every gateway (e.g. tracing, limits). */
  extra?: { all?: Env; services?: Env; gateway?: Env };
}

export interface StackEnvironment {
  issuer: string;
  /** The development identity provider's environment; undefined when a real one is used. */
  idp?: Env;
  /** Each service's replicas' environments, index as in the plan's hosts. */
  services: Partial<Record<ServiceName, Env[]>>;
  gateways: Env[];
  /** A service's address as its callers are given it: every replica, round-robin. */
  address(service: ServiceName): string;
  /** Where the gateway's replica i answers HTTP. */
  gatewayUrl(replica?: number): string;
  /** A component's GRPC_TLS_* (or GRPC_PLAINTEXT): for grpcTls() of a client the harness itself runs. */
  grpcConfig(component: Component): GrpcTlsConfig;
}

export type Component = (typeof COMPONENTS)[number];

type DevelopmentGrpcConfig = Record<
  'GRPC_TLS_CERT_FILE' | 'GRPC_TLS_KEY_FILE' | 'GRPC_TLS_CA_FILE' | 'GRPC_TLS_SPIFFE_PREFIX',
  string
>;

/** A component's GRPC_TLS_* of a development PKI written to `dir` by developmentPki. */
export function developmentGrpcConfig(dir: string, component: Component): DevelopmentGrpcConfig {
  const files = componentFiles(dir, component);
  return {
    GRPC_TLS_CERT_FILE: files.certFile,
    GRPC_TLS_KEY_FILE: files.keyFile,
    GRPC_TLS_CA_FILE: files.caFile,
    GRPC_TLS_SPIFFE_PREFIX: DEVELOPMENT_SPIFFE_PREFIX,
  };
}

/** The environment variables of a component's side of the hop. */
function grpcEnv(plan: StackPlan, component: Component): Env {
  if ('plaintext' in plan.grpc) return { GRPC_PLAINTEXT: 'true' };
  if (!plan.grpc.pki.files[component]) throw new Error(`the development PKI has no certificate for ${component}`);
  return {
    // The stacks on one machine dial loopback addresses, so grpc-js sends an IP as the TLS server name, which Node.js
    // warns about once per process (DEP0123; the certificate is still checked against the address, an IP SAN). An
    // installation dials Service names.
    NODE_OPTIONS: [process.env.NODE_OPTIONS, '--disable-warning=DEP0123'].filter(Boolean).join(' '),
    ...developmentGrpcConfig(plan.grpc.pki.dir, component),
    GRPC_TLS_SPIFFE_PREFIX: plan.grpc.pki.spiffePrefix,
  };
}

/** The environment of every process of a stack. */
export function wireStack(plan: StackPlan): StackEnvironment {
  const port = (s: ServiceName) => {
    const p = plan.grpcPorts[s];
    if (p === undefined) throw new Error(`no gRPC port for ${s}`);
    return p;
  };
  // Several replicas: grpc-js's static target lists them (round-robin), as DNS lists a headless Service's pods.
  const address = (s: ServiceName) =>
    plan.hosts.length === 1
      ? `${plan.hosts[0]}:${port(s)}`
      : `ipv4:${plan.hosts.map((h) => `${h}:${port(s)}`).join(',')}`;
  const addresses = (caller: ServiceName | 'gateway') =>
    Object.fromEntries(
      CALLS[caller].filter((s) => plan.services.includes(s)).map((s) => [`${s.toUpperCase()}_ADDRESS`, address(s)]),
    );
  const metricsPort = (name: ServiceName | 'gateway', replica: number) => {
    const p = plan.metricsPorts[name]?.[replica];
    if (p === undefined) throw new Error(`no metrics port for ${name} replica ${replica}`);
    return String(p);
  };
  const gatewayUrl = (replica = 0) => `http://${plan.hosts[replica]}:${plan.gatewayPort}`;
  const devIdp = 'issuer' in plan.identity ? undefined : plan.identity;
  const issuer =
    'issuer' in plan.identity
      ? plan.identity.issuer.replace(/\/$/, '')
      : `http://127.0.0.1:${plan.identity.port}/realms/mileage`;
  const all = plan.extra?.all ?? {};

  const services: StackEnvironment['services'] = {};
  for (const s of plan.services) {
    const database = plan.databaseUrls[s];
    services[s] = plan.hosts.map((host, replica) => ({
      ...all,
      ...grpcEnv(plan, s),
      ...(database ? { DATABASE_URL: database } : {}),
      GRPC_ADDRESS: `${host}:${port(s)}`,
      METRICS_PORT: metricsPort(s, replica),
      ...addresses(s),
      ...(s === 'scim'
        ? {
            // meta.location of a SCIM resource: /scim/v2 as clients reach it (through the gateway).
            SCIM_BASE_URL: `http://127.0.0.1:${plan.gatewayPort}/scim/v2`,
            ACTOR_ATTESTATION_SECRET: plan.secrets.actorAttestation,
          }
        : {}),
      ...(s === 'webhooks'
        ? {
            ...(plan.webhookTargets === 'public'
              ? { WEBHOOKS_MODE: 'production', WEBHOOKS_ALLOW_PRIVATE_TARGETS: '' }
              : // Webhooks to loopback receivers over http: a stack on one machine only.
                {
                  WEBHOOKS_MODE: 'development',
                  WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'loopback',
                  WEBHOOKS_TARGET_PORTS: '1-65535', // loopback receivers listen on free ports
                }),
            WEBHOOKS_SECRET_KEY: required(plan.secrets.webhooksKey, 'secrets.webhooksKey'),
          }
        : {}),
      ...plan.extra?.services,
    }));
  }
  const gateways = plan.hosts.map((host, replica) => ({
    ...all,
    ...grpcEnv(plan, 'gateway'),
    // Replicas share the port, each on its own address; a single gateway keeps the default (loopback).
    ...(plan.hosts.length > 1 ? { HOST: host } : {}),
    PORT: String(plan.gatewayPort),
    METRICS_PORT: metricsPort('gateway', replica),
    OIDC_ISSUER: issuer,
    ...addresses('gateway'),
    CURSOR_SECRET: plan.secrets.cursor,
    ACTOR_ATTESTATION_SECRET: plan.secrets.actorAttestation,
    SCIM_CLIENT_ORGANIZATIONS: DEMO_CLIENT_ORGANIZATIONS,
    ...(plan.redisUrl ? { REDIS_URL: plan.redisUrl } : {}),
    ...plan.extra?.gateway,
  }));
  const idp: Env | undefined = devIdp && {
    ...all,
    DEV_IDP_PORT: String(devIdp.port),
    DEV_IDP_DATA_DIR: devIdp.dataDir,
    SCIM_CLIENT_SECRET: devIdp.scimClientSecret,
    // The gateway's /docs page signs people in; opened as 127.0.0.1 or localhost.
    DEV_IDP_DOCS_REDIRECT_URIS: ['127.0.0.1', 'localhost']
      .map((host) => `http://${host}:${plan.gatewayPort}/docs/oauth2-redirect.html`)
      .join(','),
    ...(devIdp.accountsFile ? { DEV_IDP_ACCOUNTS_FILE: devIdp.accountsFile } : {}),
    ...(devIdp.accessTokenTtlSeconds ? { ACCESS_TOKEN_TTL_SECONDS: String(devIdp.accessTokenTtlSeconds) } : {}),
  };
  const grpcConfig = (component: Component): GrpcTlsConfig => {
    const vars = grpcEnv(plan, component);
    return 'GRPC_PLAINTEXT' in vars ? { GRPC_PLAINTEXT: true } : vars;
  };
  return { issuer, ...(idp ? { idp } : {}), services, gateways, address, gatewayUrl, grpcConfig };
}

function required<T>(value: T | undefined, name: string): T {
  if (value === undefined) throw new Error(`the stack plan needs ${name}`);
  return value;
}

/** The services of `services` that have a database, in migration order. */
export const withDatabase = <S extends ServiceName>(services: readonly S[]): S[] =>
  DATABASE_SERVICES.filter((s): s is S => (services as readonly ServiceName[]).includes(s));

/**
 * Applies each service's migrations as the chart's migration Job does (its `migrate.js`: as the schema owner, then
 * granting the runtime role), in migration order; rejects with the output of the first that fails.
 */
export async function migrateServices(
  urls: Partial<Record<ServiceName, { owner: string; runtime: string }>>,
  env: Env = {},
): Promise<void> {
  for (const s of DATABASE_SERVICES) {
    const url = urls[s];
    if (!url) continue;
    const child = spawn(process.execPath, [path.join(ROOT, `services/${s}/dist/migrate.js`)], {
      env: { ...process.env, ...env, DATABASE_URL: url.runtime, MIGRATION_DATABASE_URL: url.owner },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`migrations of ${s} failed (status ${code}): ${output.trim()}`);
  }
}
