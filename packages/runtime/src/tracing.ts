/**
 * OpenTelemetry bootstrap. Call `startTracing` from a process's first import (its `instrument.ts`),
 * before anything that should be instrumented (http, express, grpc-js, pg) is loaded.
 *
 * Export follows the standard OTEL_* variables and is off when none names an exporter or endpoint.
 * Sampling: OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG when set; otherwise parent-based with a
 * 10% trace-id ratio at the root, so an unsampled request costs almost nothing while an incoming
 * `traceparent` that is sampled is always followed.
 */
import { diag, DiagConsoleLogger, DiagLogLevel } from '@opentelemetry/api';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';

export interface Tracing {
  enabled: boolean;
  shutdown(): Promise<void>;
}

const UNOBSERVED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);
export const DEFAULT_SAMPLE_RATIO = 0.1;

export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER;
  if (exporter) return exporter !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

let active: Tracing | undefined;

export function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Tracing {
  if (active) return active;
  if (!tracingRequested(env)) {
    active = { enabled: false, shutdown: async () => {} };
    return active;
  }
  if (env.OTEL_LOG_LEVEL === 'debug') diag.setLogger(new DiagConsoleLogger(), DiagLogLevel.DEBUG);
  if (!env.OTEL_TRACES_EXPORTER) env.OTEL_TRACES_EXPORTER = 'otlp';
  if (!env.OTEL_EXPORTER_OTLP_PROTOCOL && !env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/protobuf';

  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? serviceName,
    ...(env.OTEL_TRACES_SAMPLER ? {} : { sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(DEFAULT_SAMPLE_RATIO) }) }),
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNOBSERVED_PATHS.has((req.url ?? '').split('?')[0] ?? ''),
        // Outgoing HTTP (JWKS fetches, OTLP export itself) is not part of a request's story.
        ignoreOutgoingRequestHook: () => true,
      }),
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
      new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'Watch', 'ServerReflectionInfo'] }),
      // Only queries made inside a traced request; pool connects are noise.
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
    ],
  });
  sdk.start();
  active = {
    enabled: true,
    shutdown: async () => {
      await sdk.shutdown().catch(() => undefined);
    },
  };
  return active;
}
