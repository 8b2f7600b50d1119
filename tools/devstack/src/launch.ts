// Starts the whole stack as `npm start` does — its own process group, a fresh data folder, free ports — for the suites
// that test it from outside (acceptance, SCIM conformance, the Keycloak run).
import { freePort } from '@mileage/runtime/config';
import { type GrpcTlsConfig } from '@mileage/runtime/grpc';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { developmentGrpcConfig, type Component } from './wiring';

/** Every port `npm start` listens on, by its variable. */
export const PORT_VARIABLES = [
  'EMBEDDED_POSTGRES_PORT',
  'GATEWAY_PORT',
  'GATEWAY_METRICS_PORT',
  'DEV_IDP_PORT',
  'USERS_GRPC_PORT',
  'USERS_METRICS_PORT',
  'GROUPS_GRPC_PORT',
  'GROUPS_METRICS_PORT',
  'DRIVES_GRPC_PORT',
  'DRIVES_METRICS_PORT',
  'SCIM_GRPC_PORT',
  'SCIM_METRICS_PORT',
  'WEBHOOKS_GRPC_PORT',
  'WEBHOOKS_METRICS_PORT',
] as const;

export interface LaunchedStack {
  gatewayUrl: string;
  /** The realm the gateway trusts: OIDC_ISSUER when given, else the development provider's. */
  issuer: string;
  output(): string;
  /**
   * A component's GRPC_TLS_* of the stack's development PKI (grpcTls() of it: a client of the stack's services as
   * that component, e.g. `seed` for the writes of demo data).
   */
  grpcConfig(component: Component): GrpcTlsConfig;
  /** SIGTERM to the stack's process group; resolves when it has exited and its data folder is gone. */
  stop(): Promise<void>;
}

type LaunchOptions = { env?: Record<string, string>; logLevel?: string };

/**
 * Starts the stack on free ports. A port found free can still be taken by another process before the stack binds it
 * (suites run side by side); then the stack is started again on other ports, up to three times.
 */
export async function launchStack(options: LaunchOptions = {}): Promise<LaunchedStack> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await launchOnce(options);
    } catch (err) {
      if (attempt >= 3 || !(err instanceof Error && /EADDRINUSE|already in use/.test(err.message))) throw err;
    }
  }
}

async function launchOnce(options: LaunchOptions): Promise<LaunchedStack> {
  const ports: Record<string, string> = {};
  // A port the caller chose (e.g. one another process was told about) is kept; the others are free ones.
  for (const name of PORT_VARIABLES) ports[name] = options.env?.[name] ?? String(await freePort());
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mileage-stack-'));
  // initdb runs as an unprivileged user when we are root: it must be able to enter the folder.
  chmodSync(dataDir, 0o755);
  // The embedded defaults: no external database or Redis from the caller's environment.
  const { DATABASE_URL: _db, REDIS_URL: _redis, OIDC_ISSUER: _issuer, ...inherited } = process.env;
  // DEP0123: the stack's own gRPC clients dial loopback addresses over TLS (wiring.ts says why that is harmless).
  const child: ChildProcess = spawn(process.execPath, ['--disable-warning=DEP0123', path.join(__dirname, 'main.js')], {
    env: { ...inherited, ...ports, DATA_DIR: dataDir, LOG_LEVEL: options.logLevel ?? 'warn', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // Already gone.
      }
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ctrl-C stops everything.')) resolve();
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => reject(new Error(`the stack exited (${code}):\n${out}`)));
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    gatewayUrl: `http://127.0.0.1:${ports.GATEWAY_PORT}`,
    issuer: options.env?.OIDC_ISSUER?.replace(/\/$/, '') ?? `http://127.0.0.1:${ports.DEV_IDP_PORT}/realms/mileage`,
    output: () => out,
    grpcConfig: (component) =>
      options.env?.GRPC_PLAINTEXT === 'true'
        ? { GRPC_PLAINTEXT: true }
        : developmentGrpcConfig(path.join(dataDir, 'grpc-pki'), component),
    stop,
  };
}
