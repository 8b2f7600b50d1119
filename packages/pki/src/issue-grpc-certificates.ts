#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CA_ROTATIONS, type CaRotation, ensureGrpcCertificates, KubeClient, parseIssuerConfig } from './kubernetes';

/**
 * The chart's hook Job (grpcTls chart-managed): makes or renews the internal hop's certificates in the release's
 * namespace (./kubernetes.ts). In the pod it finds the API server and its credentials where Kubernetes puts them; each
 * can be given instead, to run it from elsewhere:
 *
 *   node packages/pki/dist/issue-grpc-certificates.js [--config JSON] [--ca-rotation STEP]
 *     [--api-server URL] [--token-file FILE] [--ca-file FILE]
 *
 * --config (or GRPC_ISSUER_CONFIG): what the chart renders (namespace, CA Secret, each component's Secret, SPIFFE id
 * and DNS names, lifetimes, caRotation). --api-server (KUBERNETES_API_SERVER; default
 * https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT), --token-file (KUBERNETES_TOKEN_FILE) and --ca-file
 * (KUBERNETES_CA_FILE; default: the ServiceAccount's token and ca.crt in /var/run/secrets/kubernetes.io/serviceaccount).
 * Logs JSON lines; exits 0 when every Secret is as wanted, 1 otherwise.
 */
const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

function log(level: string, msg: string, fields: Record<string, unknown> = {}) {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
}

function defaultServer(env: NodeJS.ProcessEnv) {
  const host = env.KUBERNETES_SERVICE_HOST;
  if (!host) return 'https://kubernetes.default.svc';
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  return `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export async function main(argv = process.argv.slice(2), env = process.env): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      'ca-rotation': { type: 'string' },
      'api-server': { type: 'string' },
      'token-file': { type: 'string' },
      'ca-file': { type: 'string' },
    },
    strict: true,
  });
  const configText = values.config ?? env.GRPC_ISSUER_CONFIG;
  if (!configText) throw new Error('no configuration: --config JSON or GRPC_ISSUER_CONFIG');
  const config = parseIssuerConfig(configText);
  if (values['ca-rotation'] !== undefined) {
    if (!CA_ROTATIONS.includes(values['ca-rotation'] as CaRotation))
      throw new Error(`--ca-rotation: one of ${CA_ROTATIONS.map((r) => `"${r}"`).join(', ')}`);
    config.caRotation = values['ca-rotation'] as CaRotation;
  }
  const server = values['api-server'] ?? env.KUBERNETES_API_SERVER ?? defaultServer(env);
  const tokenFile = values['token-file'] ?? env.KUBERNETES_TOKEN_FILE ?? `${SERVICE_ACCOUNT}/token`;
  const caFile = values['ca-file'] ?? env.KUBERNETES_CA_FILE ?? `${SERVICE_ACCOUNT}/ca.crt`;
  const token = readFileSync(tokenFile, 'utf8').trim();
  const ca = server.startsWith('https:') ? readFileSync(caFile, 'utf8') : undefined;
  const client = new KubeClient({ server, token, ca });
  log('info', 'issuing the gRPC certificates', {
    server,
    namespace: config.namespace,
    caSecret: config.caSecret,
    caRotation: config.caRotation,
    components: config.certificates.map((c) => c.component),
  });
  const report = await ensureGrpcCertificates(client, config, {
    log: (msg, fields) => log(String(fields?.level ?? 'info'), msg, { ...fields, level: undefined }),
  });
  const changed = Object.values(report.secrets).filter((s) => s.action !== 'unchanged').length;
  log('info', `done: CA ${report.ca}, ${changed} of ${config.certificates.length} Secrets changed`, {
    ca: report.ca,
    secrets: report.secrets,
    restarted: report.restarted,
  });
  return 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      log('error', (err as Error).message);
      process.exit(1);
    },
  );
}
