/**
 * OpenTelemetry tracing with explicit context passing.
 *
 * Spans are made at the process boundaries this code owns — the gateway's HTTP server, every gRPC client
 * call, every gRPC server call, and the SQL of the data-access modules — and the W3C trace context is
 * passed along explicitly (as `Context` values, `traceparent` headers and gRPC metadata), so the trace of a
 * request reads gateway → gRPC → SQL. No auto-instrumentation and no context manager: on Node.js 20 a
 * context manager means an AsyncLocalStorage hook on every promise of the process, and the auto-instrumentations
 * wrap every request even when it is not sampled; measured in docs/benchmarks.md.
 *
 * Export follows the standard OTEL_* variables and is off when none names an exporter or endpoint. The OTLP
 * protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf; http/json and
 * grpc are honoured too, and any other value stops the process at start-up (exit 78) instead of being ignored. Sampling: OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG when set; otherwise
 * parent-based with a 10 % trace-id ratio at the root, so an unsampled request costs almost nothing while a
 * sampled incoming `traceparent` is always followed.
 */
import {
  diag,
  DiagConsoleLogger,
  DiagLogLevel,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
  type Tracer,
} from '@opentelemetry/api';
import { ConfigError } from '../config/config';

export type { Context as TraceContext, Span } from '@opentelemetry/api';

export interface Tracing {
  enabled: boolean;
  shutdown(): Promise<void>;
}

export const DEFAULT_SAMPLE_RATIO = 0.1;

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/** The OTLP protocol the standard variables select; a ConfigError names the variable when it is not supported. */
export function otlpProtocol(env: NodeJS.ProcessEnv = process.env): OtlpProtocol {
  const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : env.OTEL_EXPORTER_OTLP_PROTOCOL
      ? 'OTEL_EXPORTER_OTLP_PROTOCOL'
      : undefined;
  if (!name) return 'http/protobuf';
  const value = env[name]!.trim();
  if ((OTLP_PROTOCOLS as readonly string[]).includes(value)) return value as OtlpProtocol;
  throw new ConfigError([`${name}: expected one of ${OTLP_PROTOCOLS.join(', ')} (${JSON.stringify(value)})`]);
}

/** The span exporter of a protocol, loaded only when tracing is on; each reads the standard endpoint variables. */
function otlpExporter(protocol: OtlpProtocol): import('@opentelemetry/sdk-trace-base').SpanExporter {
  /* eslint-disable @typescript-eslint/no-require-imports -- deliberate lazy loading */
  switch (protocol) {
    case 'http/protobuf': {
      const otlp = require('@opentelemetry/exporter-trace-otlp-proto');
      return new (otlp as typeof import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
    }
    case 'http/json': {
      const otlp = require('@opentelemetry/exporter-trace-otlp-http');
      return new (otlp as typeof import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
    }
    case 'grpc': {
      const otlp = require('@opentelemetry/exporter-trace-otlp-grpc');
      return new (otlp as typeof import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter();
    }
  }
  /* eslint-enable @typescript-eslint/no-require-imports */
}

let tracer: Tracer | undefined;
let active: Tracing | undefined;
/** Share of requests arriving from outside that are recorded (the configured sampler's ratio). */
let edgeRatio = DEFAULT_SAMPLE_RATIO;

export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER;
  if (exporter) return exporter !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export function tracingEnabled(): boolean {
  return tracer !== undefined;
}

/** Call once, first thing in a process (the gateway's `instrument.ts`; `runService` for the services). */
export function startTracing(
  serviceName: string,
  env: NodeJS.ProcessEnv = process.env,
  /** Tests only: export synchronously to this exporter instead of OTLP. */
  testing?: { spanExporter: import('@opentelemetry/sdk-trace-base').SpanExporter },
): Tracing {
  if (active) return active;
  if (!tracingRequested(env)) {
    active = { enabled: false, shutdown: async () => {} };
    return active;
  }
  let protocol: OtlpProtocol;
  try {
    protocol = otlpProtocol(env);
  } catch (err) {
    // Tracing starts before the process reads the rest of its configuration: fail the same way config does.
    if (!(err instanceof ConfigError) || testing) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(78);
  }
  if (env.OTEL_LOG_LEVEL === 'debug') diag.setLogger(new DiagConsoleLogger(), DiagLogLevel.DEBUG);
  // Loaded only when tracing is on.
  /* eslint-disable @typescript-eslint/no-require-imports -- deliberate lazy loading */
  const base = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');
  const resources = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  /* eslint-enable @typescript-eslint/no-require-imports */

  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME ?? serviceName }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new base.BasicTracerProvider({
    resource,
    // Without OTEL_TRACES_SAMPLER the SDK would record every trace; ours defaults to 10 % of new traces.
    ...(env.OTEL_TRACES_SAMPLER
      ? {}
      : { sampler: new base.ParentBasedSampler({ root: new base.TraceIdRatioBasedSampler(DEFAULT_SAMPLE_RATIO) }) }),
    spanProcessors: [
      testing
        ? new base.SimpleSpanProcessor(testing.spanExporter)
        : new base.BatchSpanProcessor(otlpExporter(protocol)),
    ],
  });
  edgeRatio = samplerRatio(env);
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  tracer = provider.getTracer('mileage-platform');
  active = {
    enabled: true,
    shutdown: async () => {
      await provider.shutdown().catch(() => undefined);
    },
  };
  return active;
}

const headerGetter: TextMapGetter<Record<string, string | string[] | undefined>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/** The context carried by incoming headers or gRPC metadata (as a plain map), or the root context. */
export function extractContext(carrier: Record<string, string | string[] | undefined>): Context {
  return tracer ? propagation.extract(ROOT_CONTEXT, carrier, headerGetter) : ROOT_CONTEXT;
}

/** The ratio of new traces the configured sampler records (the standard OTEL_TRACES_SAMPLER values). */
function samplerRatio(env: NodeJS.ProcessEnv): number {
  const sampler = env.OTEL_TRACES_SAMPLER;
  if (!sampler) return DEFAULT_SAMPLE_RATIO;
  if (/always_on$/.test(sampler)) return 1;
  if (/always_off$/.test(sampler)) return 0;
  const arg = Number(env.OTEL_TRACES_SAMPLER_ARG ?? 1);
  return Number.isFinite(arg) ? Math.min(1, Math.max(0, arg)) : 1;
}

/**
 * The context of a request from outside (the gateway's HTTP requests): it joins the caller's trace (same trace id,
 * the caller's span as parent) but the caller's `sampled` flag is not obeyed. Whether it is recorded is decided here,
 * at the configured ratio with our own randomness (not from the trace id, which the caller chooses): otherwise any
 * unauthenticated request could force every span of its path to be recorded and exported.
 */
export function extractEdgeContext(carrier: Record<string, string | string[] | undefined>): Context {
  if (!tracer) return ROOT_CONTEXT;
  const incoming = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, carrier, headerGetter));
  if (!incoming || !trace.isSpanContextValid(incoming)) return ROOT_CONTEXT;
  const traceFlags = Math.random() < edgeRatio ? TraceFlags.SAMPLED : TraceFlags.NONE;
  return trace.setSpanContext(ROOT_CONTEXT, { ...incoming, traceFlags });
}

/** Writes `traceparent` (and `tracestate`) of `context` through `set`. */
export function injectContext(context: Context, set: (key: string, value: string) => void): void {
  if (!tracer) return;
  const setter: TextMapSetter<null> = { set: (_carrier, key, value) => set(key, value) };
  propagation.inject(context, null, setter);
}

export interface StartedSpan {
  span: Span;
  /** `parent` with this span as the current span: pass it to whatever happens inside. */
  context: Context;
}

const NOOP: StartedSpan = {
  span: trace.wrapSpanContext({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 }),
  context: ROOT_CONTEXT,
};

/** Starts a span as a child of `parent` (the sampler decides whether it records). */
export function startSpan(name: string, kind: SpanKind, parent: Context, attributes?: Attributes): StartedSpan {
  if (!tracer) return NOOP;
  const span = tracer.startSpan(name, { kind, ...(attributes ? { attributes } : {}) }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/** Ends a span with an error status when `error` is given. */
export function endSpan(span: Span, error?: unknown, attributes?: Attributes): void {
  if (!span.isRecording()) return span.end();
  if (attributes) span.setAttributes(attributes);
  if (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  }
  span.end();
}

/** Runs `fn` inside a child span of `parent` when that trace is being recorded; otherwise just runs it. */
export async function inSpan<T>(
  parent: Context | undefined,
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  fn: () => Promise<T>,
): Promise<T> {
  if (!tracer || !parent || !trace.getSpan(parent)?.isRecording()) return fn();
  const { span } = startSpan(name, kind, parent, attributes);
  try {
    const result = await fn();
    endSpan(span);
    return result;
  } catch (err) {
    endSpan(span, err);
    throw err;
  }
}

/** `trace_id` / `span_id` log fields of a recorded context (empty otherwise). */
export function traceLogFields(context: Context | undefined): { trace_id?: string; span_id?: string } {
  const span = context && trace.getSpan(context);
  if (!span?.isRecording()) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

export { SpanKind };
