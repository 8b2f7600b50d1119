export * from './config';
export * from './context';
export * from './db';
export * from './errors';
export * from './grpc-client';
export * from './grpc-server';
export * from './logger';
export * from './metrics';
export * from './shutdown';
export {
  endSpan,
  extractContext,
  injectContext,
  inSpan,
  SpanKind,
  startSpan,
  startTracing,
  traceLogFields,
  tracingEnabled,
  tracingRequested,
  type Span,
  type StartedSpan,
  type TraceContext,
  type Tracing,
} from './tracing';
export { freePort } from './net';
export { runMigrations, runService, serviceConfigSchema, type ServiceDefinition } from './service';
