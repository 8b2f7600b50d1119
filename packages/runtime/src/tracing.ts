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
 * Export follows the standard OTEL_* variables (OTLP over http/protobuf) and is off when none names an
 * exporter or endpoint. Sampling: OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG when set; otherwise
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
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
  type Tracer,
} from '@opentelemetry/api';

export type { Context as TraceContext, Span } from '@opentelemetry/api';

export interface Tracing {
  enabled: boolean;
  shutdown(): Promise<void>;
}

export const DEFAULT_SAMPLE_RATIO = 0.1;

let tracer: Tracer | undefined;
let active: Tracing | undefined;

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
  if (env.OTEL_LOG_LEVEL === 'debug') diag.setLogger(new DiagConsoleLogger(), DiagLogLevel.DEBUG);
  // Loaded only when tracing is on.
  /* eslint-disable @typescript-eslint/no-require-imports -- deliberate lazy loading */
  const base = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { OTLPTraceExporter } =
    require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto');
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
        : new base.BatchSpanProcessor(new OTLPTraceExporter()),
    ],
  });
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
