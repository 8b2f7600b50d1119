// Feeds the environment the chart gives each Deployment to the processes' own configuration schemas (the zod schemas
// they validate at start, exiting 78 on a problem), so a misspelt variable or an unacceptable value fails here and
// not in a crash-looping pod. Needs the workspaces built (npm run build).
// Usage: node check-env.mjs <env.json from check-rendered.py> <set name> <repository root>
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const [envFile, setName, root] = process.argv.slice(2);
const require = createRequire(join(root, 'packages/runtime/package.json'));
// The runtime's modules by idea (its package exports), as the processes import them.
const runtime = Object.assign(
  {},
  ...['service', 'database', 'outbox', 'config', 'telemetry', 'storage'].map((part) =>
    require(`@mileage/runtime/${part}`),
  ),
);
const { z } = require('zod');
const { configSchema: gatewaySchema } = require(join(root, 'gateway/dist/config.js'));

const GRPC = { users: 50051, groups: 50052, drives: 50053, scim: 50054, webhooks: 50055 };
const METRICS = { users: 9461, groups: 9462, drives: 9463, scim: 9464, webhooks: 9465 };
// Values of Secrets the chart does not write (postgres.existingSecret and the like): plausible stand-ins.
const STAND_INS = {
  DATABASE_URL: 'postgres://role:password@postgres.example:5432/mileage?sslmode=require',
  REDIS_URL: 'redis://redis.example:6379',
  CURSOR_SECRET: 'x'.repeat(48),
  CURSOR_SECRET_PREVIOUS: 'x'.repeat(48),
  ACTOR_ATTESTATION_SECRET: 'x'.repeat(48),
  ACTOR_ATTESTATION_PREVIOUS_SECRET: 'x'.repeat(48),
  WEBHOOKS_SECRET_KEY: 'x'.repeat(48),
};
const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];
// Variables no schema lists but the processes (Node, OpenTelemetry, the AWS SDK of the exports' object store) read.
const OUTSIDE_SCHEMAS = /^(OTEL_[A-Z_]+|NODE_OPTIONS|NODE_EXTRA_CA_CERTS|TZ|AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY)$/;

const schemas = {
  gateway: gatewaySchema,
  ...Object.fromEntries(
    Object.keys(GRPC).map((s) => [s, runtime.serviceConfigSchema({ grpcPort: GRPC[s], metricsPort: METRICS[s] })]),
  ),
};
// The SCIM service's own variables (services/scim/src/config.ts), on top of every service's.
schemas.scim = schemas.scim.extend(require(join(root, 'services/scim/dist/config.js')).configShape);
// The database variables of the services that have one (the SCIM service has none).
for (const s of ['users', 'groups', 'drives', 'webhooks']) schemas[s] = schemas[s].extend(runtime.databaseConfigShape);
// The Webhooks and Users services' own variables (their src/config.ts; the Users one includes its outbox relay's);
// the outbox relay's of Drives.
schemas.webhooks = schemas.webhooks.extend(require(join(root, 'services/webhooks/dist/config.js')).configShape);
schemas.users = schemas.users.extend(require(join(root, 'services/users/dist/config.js')).configShape);
schemas.drives = schemas.drives.extend(require(join(root, 'services/drives/dist/config.js')).configShape);
// The Groups service's own variables, declared in services/groups/src/main.ts (restated for the same reason): its part
// of an organization export.
schemas.groups = schemas.groups.extend({ ...runtime.archiveStoreConfigShape, SCIM_BASE_URL: z.url() });

const problems = [];
const envs = JSON.parse(readFileSync(envFile, 'utf8'));
for (const [component, rendered] of Object.entries(envs)) {
  const env = {};
  for (const [name, value] of Object.entries(rendered)) {
    env[name] = typeof value === 'string' ? value : (value.value ?? STAND_INS[name] ?? 'stand-in');
  }
  const schema = schemas[component];
  if (!schema) {
    problems.push(`${component}: no schema known`);
    continue;
  }
  for (const name of Object.keys(env)) {
    if (!(name in schema.shape) && !OUTSIDE_SCHEMAS.test(name))
      problems.push(`${component}: ${name} is read by no schema of the process`);
  }
  try {
    runtime.loadConfig(schema, env);
  } catch (err) {
    problems.push(`${component}: ${err.message.replace(/\n\s*/g, '; ')}`);
  }
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined && !z.url().safeParse(env.OTEL_EXPORTER_OTLP_ENDPOINT).success)
    problems.push(`${component}: OTEL_EXPORTER_OTLP_ENDPOINT is no URL`);
  if (env.OTEL_TRACES_SAMPLER !== undefined && !SAMPLERS.includes(env.OTEL_TRACES_SAMPLER))
    problems.push(`${component}: OTEL_TRACES_SAMPLER ${env.OTEL_TRACES_SAMPLER}`);
  if (env.OTEL_TRACES_SAMPLER_ARG !== undefined) {
    const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG);
    if (!(ratio >= 0 && ratio <= 1))
      problems.push(`${component}: OTEL_TRACES_SAMPLER_ARG ${env.OTEL_TRACES_SAMPLER_ARG} is not a ratio`);
  }
  if (runtime.tracingRequested(env) !== (env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined))
    problems.push(`${component}: tracing on/off does not follow tracing.otlpEndpoint`);
}

if (problems.length) {
  console.log(problems.map((p) => `${setName}: env: ${p}`).join('\n'));
  process.exit(1);
}
console.log(
  `${setName}: the environment of ${Object.keys(envs).length} Deployments passes the processes' own configuration schemas`,
);
