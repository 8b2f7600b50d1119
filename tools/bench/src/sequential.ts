// Shared by the volume benches (bench:paging, bench:scim, bench:webhooks): a throw-away PostgreSQL, services served in
// the bench's own process, and sequential timing.
import { startPostgres, type RunningPostgres } from '@mileage/devstack';
import { PROTO_FILES } from '@mileage/proto';
import {
  createGrpcClient,
  startGrpcServer,
  type GeneratedClientConstructor,
  type ServiceRegistration,
} from '@mileage/runtime/grpc';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import { freePort } from '@mileage/runtime/config';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runtimeNote } from './proc';

export interface Latency {
  p50: number;
  p99: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** p50 / p99 in ms of `calls` sequential calls after 20 warm-up calls; each sample is one call's latency. */
export async function timeSequential(calls: number, fn: (i: number) => Promise<unknown>): Promise<Latency> {
  for (let i = 0; i < 20; i++) await fn(i);
  const samples: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t = process.hrtime.bigint();
    await fn(i);
    samples.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return latencyOf(samples);
}

function latencyOf(samples: number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

/**
 * `calls` pairs: `first` then `second`, one after another (an add and the remove that undoes it), after 10 warm-up
 * pairs; p50 / p99 in ms of each kind on its own.
 */
export async function timeAlternating(
  calls: number,
  first: () => Promise<unknown>,
  second: () => Promise<unknown>,
): Promise<[Latency, Latency]> {
  for (let i = 0; i < 10; i++) await first().then(second);
  const samples: [number[], number[]] = [[], []];
  for (let i = 0; i < calls; i++)
    for (const [k, fn] of [first, second].entries()) {
      const t = process.hrtime.bigint();
      await fn();
      samples[k]!.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  return [latencyOf(samples[0]), latencyOf(samples[1])];
}

/** Runs `work` against a fresh embedded PostgreSQL in a temporary folder, removed afterwards (also on Ctrl-C). */
export async function withBenchPostgres(name: string, work: (url: string) => Promise<void>): Promise<void> {
  const workdir = mkdtempSync(path.join(tmpdir(), `mileage-${name}-`));
  const log = (m: string) => process.stderr.write(`${m}\n`);
  let server: RunningPostgres | undefined;
  const stop = async () => {
    await server?.stop().catch(() => {});
    rmSync(workdir, { recursive: true, force: true });
  };
  const interrupted = () => void stop().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  try {
    log(`${name}: ${runtimeNote()}`);
    server = await startPostgres({ dir: workdir, port: await freePort(), password: 'bench', persistent: false, log });
    await work(server.adminUrl);
  } finally {
    process.removeListener('SIGINT', interrupted);
    await stop();
  }
}

/** grpc-js's client class, as createGrpcClient takes it (the bench does not depend on grpc-js itself). */
type GrpcClient = Parameters<typeof createGrpcClient>[0] extends GeneratedClientConstructor<infer C> ? C : never;

/**
 * One service's gRPC implementation served in this process on a free loopback port, and a client of it: the real
 * server and protocol, without a process of its own.
 */
export async function serveInProcess<C extends GrpcClient>(
  name: keyof typeof PROTO_FILES,
  implementation: ServiceRegistration | ServiceRegistration[],
  Client: GeneratedClientConstructor<C>,
  defaultDeadlineMs = 10_000,
): Promise<{ client: ReturnType<typeof createGrpcClient<C>>; stop(): Promise<void> }> {
  const server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [implementation].flat(),
    protoFiles: [PROTO_FILES[name]],
    logger: createLogger({ service: `${name}-bench`, level: 'silent' }),
    metrics: new Metrics(name),
  });
  const client = createGrpcClient(Client, `127.0.0.1:${server.port}`, { defaultDeadlineMs });
  return {
    client,
    stop: async () => {
      client.close();
      await server.shutdown(1_000);
    },
  };
}
