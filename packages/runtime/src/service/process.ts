import type { z } from 'zod';
import { loadConfigOrExit } from '../config/config';
import { checkOwnIdentity, grpcTls, reportGrpcTls, type GrpcTls, type GrpcTlsConfig } from '../grpc/grpc-tls';
import { createLogger, type Logger } from '../telemetry/logger';
import { Metrics } from '../telemetry/metrics';
import { handleShutdown, type ShutdownStep } from './shutdown';
import { startTracing } from '../telemetry/tracing';

/** The configuration every process reads (commonConfigSchema and grpcTlsConfigShape). */
export type ProcessConfig = GrpcTlsConfig & {
  LOG_LEVEL: string;
  METRICS_PORT: number;
  METRICS_HOST: string;
  SHUTDOWN_TIMEOUT_MS: number;
};

/** What runProcess has made before the process's own start: the makings of everything else. */
export interface ProcessContext<Config> {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  /** The gRPC hop's credentials, checked to name this process's component. */
  tls: GrpcTls;
}

/** What a process's own start has started: more of the metrics server, and how to stop it. */
export interface StartedProcess {
  /** JSON documents and probes served beside /metrics (a gRPC service's /healthz, /readyz). */
  metricsRoutes?: { documents?: Record<string, () => unknown>; probes?: Record<string, () => boolean> };
  /** Its steps of the graceful shutdown, in order; the metrics server and tracing are stopped after them. */
  shutdown: ShutdownStep[];
}

/**
 * The start-up every process of the platform shares (each service through runService, the gateway directly):
 * tracing, the configuration (fail fast, exit 78), logger, metrics, the gRPC hop's TLS (its own identity checked, its
 * state reported); then `start`; then /metrics and the graceful shutdown of what `start` started, the metrics server
 * and tracing last. A failure to start is reported on stderr and exits 1.
 */
export async function runProcess<S extends z.ZodObject>(
  name: string,
  schema: S,
  start: (context: ProcessContext<z.infer<S> & ProcessConfig>) => Promise<StartedProcess>,
): Promise<void> {
  try {
    const tracing = startTracing(name);
    const config = loadConfigOrExit(schema) as z.infer<S> & ProcessConfig;
    const logger = createLogger({ service: name, level: config.LOG_LEVEL });
    const metrics = new Metrics(name);
    const tls = grpcTls(config);
    checkOwnIdentity(tls, name);
    reportGrpcTls(tls, logger, metrics);
    const started = await start({ config, logger, metrics, tls });
    const metricsServer = await metrics.listen(
      config.METRICS_PORT,
      config.METRICS_HOST,
      started.metricsRoutes?.documents,
      started.metricsRoutes?.probes,
    );
    handleShutdown(
      logger,
      [
        ...started.shutdown,
        { name: 'metrics', run: () => new Promise((resolve) => metricsServer.close(resolve)) },
        { name: 'tracing', run: () => tracing.shutdown() },
      ],
      config.SHUTDOWN_TIMEOUT_MS,
    );
  } catch (err) {
    process.stderr.write(`${name}: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
