export * from './circuit-breaker';
export * from './config';
export * from './context';
export * from './db';
export * from './dependencies';
export * from './errors';
export * from './grpc-client';
export * from './end-user';
export * from './grpc-authz';
export * from './grpc-server';
export { chain, type InboundCall, type Interceptor, type Next } from './grpc/interceptor';
export { callerIdentity } from './grpc/identity';
export { endUserBinding, endUserProblem } from './grpc/end-user';
export { organizationNamed, organizationScope } from './grpc/organization';
export { isRetried, retryMethodConfig } from './grpc/retry';
export { callGraph, PROCESSES, serverOf, type Process, type Server } from './grpc/call-graph';
export * from './grpc-tls';
export * from './attestation';
export * from './logger';
export * from './metrics';
export * from './shutdown';
export { runProcess, type ProcessConfig, type ProcessContext, type StartedProcess } from './process';
export {
  endSpan,
  extractContext,
  extractEdgeContext,
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
export { parseRfc3339, type TimestampCheck } from './timestamps';
export * from './wire-time';
export * from './http-status';
export * from './ids';
export * from './id-arguments';
export * from './tenancy';
export * from './organization-share';
export * from './list-window';
export * from './member-users';
export * from './per-turn';
export {
  checkServiceConfig,
  connectionAge,
  databaseConfigShape,
  runMigrations,
  runEvery,
  runService,
  serviceConfigSchema,
  serviceDatabase,
  type ClientSpec,
  type ConnectedClients,
  type OpenDatabase,
  type ServiceConfig,
  type ServiceContext,
  type StatelessServiceContext,
  type BackgroundTask,
  type ServiceDefinition,
} from './service';
export * from './outbox';
export * from './provisioning-audit';
export * from './outbox-relay';
