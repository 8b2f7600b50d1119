import * as grpc from '@grpc/grpc-js';
import {
  CIRCUIT_STATE_VALUE,
  CircuitBreaker,
  HALF_OPEN_RETRY_AFTER_MS,
  type CircuitBreakerOptions,
} from './circuit-breaker';
import { REQUEST_ID_METADATA_KEY } from '../telemetry/context';
import { END_USER_CERT_METADATA_KEY, END_USER_METADATA_KEY, type SignedEndUser } from './end-user';
import { ORGANIZATION_METADATA_KEY } from './organization-metadata';
import { AppError, hasStatusDetails, toStatusObject } from './errors';
import type { Logger } from '../telemetry/logger';
import type { Metrics } from '../telemetry/metrics';
import {
  endSpan,
  injectContext,
  SpanKind,
  startSpan,
  tracingEnabled,
  type Span,
  type TraceContext,
} from '../telemetry/tracing';
import { service as healthService } from 'grpc-health-check';
import { METHOD_RULES, type Component, type MethodRules } from '@mileage/proto';
import { isRetried, retryMethodConfig } from './retry';

/**
 * How soon a client tries a lost address again: the first wait, growing to the longest (grpc-js's own default grows
 * to 120 s), each with grpc-js's ±20 % jitter. A restarted service is called again within the longest of these.
 */
export const INITIAL_RECONNECT_BACKOFF_MS = 200;
export const MAX_RECONNECT_BACKOFF_MS = 5_000;

/**
 * Every connection is pinged this often, with or without calls, and closed when a ping is not answered within
 * KEEPALIVE_TIMEOUT_MS: a replica that stopped answering (SIGSTOP, a long GC pause, a partitioned node) leaves the
 * round robin within their sum — no longer than the gateway's 2 s deadline — and its calls in flight fail with
 * UNAVAILABLE (reads are retried on another replica). It rejoins once it answers the handshake again: grpc-js counts
 * a connection ready only after the server's SETTINGS.
 */
export const KEEPALIVE_TIME_MS = 1_000;
export const KEEPALIVE_TIMEOUT_MS = 1_000;
const KEEPALIVE_OPTIONS = {
  'grpc.keepalive_time_ms': KEEPALIVE_TIME_MS,
  'grpc.keepalive_timeout_ms': KEEPALIVE_TIMEOUT_MS,
  'grpc.keepalive_permit_without_calls': 1,
};

/**
 * How much of its answers a client lets a server send ahead of what it has read (its HTTP/2 window, per stream and per
 * connection), instead of Node.js's 64 KB: a large answer (an export archive's 1 MiB read, a page of 1,000 drives)
 * then comes in one go rather than 64 KB at a time, each waiting for this process's event loop to grant the next,
 * while the answer's buffers stay alive meanwhile (docs/benchmarks.md, "An organization exported").
 */
export const FLOW_CONTROL_WINDOW_BYTES = 4 * 1024 * 1024;

/**
 * The longest deadline a call may have: a few background calls (an owner's part of an organization export) take
 * minutes. Every server's GRPC_MAX_CONNECTION_AGE_GRACE_MS covers it (service.ts checks this at start-up), so a call
 * on a connection closed for its age (GOAWAY) still finishes before the server ends the connection.
 */
export const LONGEST_CALL_DEADLINE_MS = 30 * 60_000;

const HEALTH_SERVICE = healthService as unknown as grpc.ServiceDefinition;

export interface CallSettings {
  /** Overrides the client's default deadline for this call. */
  deadlineMs?: number;
  /** Sent as `x-request-id` metadata so the callee logs under the same id. */
  requestId?: string;
  /** The caller's trace context: the call becomes a client span in it and carries `traceparent`. */
  trace?: TraceContext;
  /** The organization the call acts inside, sent as `x-mileage-organization` metadata (grpc/organization-metadata.ts). */
  organizationId?: number;
  /** The gateway's signed end-user context the call acts for (end-user.ts), sent as metadata and forwarded as is. */
  endUser?: SignedEndUser;
}

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: (error: grpc.ServiceError | null, response: Res) => void,
) => grpc.ClientUnaryCall;

/** A ts-proto grpc-js client's unary methods as promise-returning functions that always carry a deadline. */
export type PromiseClient<C> = {
  [K in keyof C as C[K] extends UnaryMethod<never, unknown> ? K : never]: C[K] extends UnaryMethod<infer Req, infer Res>
    ? (request: Req, settings?: CallSettings) => Promise<Res>
    : never;
} & { close(): void; channel: grpc.Client; circuit: CircuitBreaker };

export interface GeneratedClientConstructor<C> {
  new (address: string, credentials: grpc.ChannelCredentials, options?: Partial<grpc.ClientOptions>): C;
  service: grpc.ServiceDefinition;
}

/**
 * Creates a client whose every call has a deadline (the default unless a call sets its own), forwards
 * the request id it is given, and records client RED metrics. No call waits for the channel to become
 * ready: a server that is down answers UNAVAILABLE at once rather than hanging until the deadline.
 * A circuit breaker (`circuitBreaker`) refuses calls at once with UNAVAILABLE (reason CIRCUIT_OPEN, a RetryInfo of
 * the time it stays open) after calls in a row found the downstream not answering.
 */
export function createGrpcClient<C extends grpc.Client>(
  Client: GeneratedClientConstructor<C>,
  address: string,
  options: {
    defaultDeadlineMs: number;
    /** The channel's credentials (grpcTls(config).channelCredentials(): mutual TLS when configured); default plaintext. */
    credentials?: grpc.ChannelCredentials;
    metrics?: Metrics;
    /**
     * False while the service is known to be down (its health check fails): calls then fail with UNAVAILABLE at
     * once instead of waiting for their deadline on a frozen server.
     */
    available?: () => boolean;
    /**
     * Least time between two DNS resolutions of the address (grpc-js: 30 s). Re-resolution happens when a
     * connection closes, e.g. when a server ends it at its maximum connection age.
     */
    minResolveIntervalMs?: number;
    /**
     * The circuit breaker of this client (one downstream): failures in a row that open it (0: off) and how long it
     * stays open before a health check on the channel probes whether the downstream answers again. Default: off.
     */
    circuitBreaker?: CircuitBreakerOptions;
    /** Where the breaker's state changes are logged (one line each). */
    logger?: Logger;
    /** The methods' rules (which are retried): default the generated ones of proto/. */
    rules?: Readonly<Record<string, MethodRules<Component>>>;
    /**
     * For calls that may outlive a connection's maximum age (seconds to minutes): no keepalive pings. grpc-js (1.14)
     * keeps pinging a connection its server has closed for its age (GOAWAY); Node refuses a ping on a closing
     * session, and grpc-js then ends every call still running on it with UNAVAILABLE "Connection dropped" within
     * KEEPALIVE_TIME_MS of the GOAWAY, whatever the server's grace (grpc/grpc-node#3068). Without pings such a call
     * runs to its end on the draining connection, bounded by the server's grace; a frozen server is found by the
     * call's deadline only, so keep these clients for background work, never for a request someone waits on.
     */
    longCalls?: boolean;
  },
): PromiseClient<C> {
  if (options.defaultDeadlineMs > LONGEST_CALL_DEADLINE_MS)
    throw new Error(`a gRPC client's default deadline may not exceed ${LONGEST_CALL_DEADLINE_MS} ms`);
  const serviceName = grpcServiceName(Client.service);
  const circuitLabels = { target: address, grpc_service: serviceName };
  options.metrics?.grpcClientCircuitState.set(circuitLabels, CIRCUIT_STATE_VALUE.closed);
  const client = new Client(address, options.credentials ?? grpc.credentials.createInsecure(), {
    ...(options.longCalls ? {} : KEEPALIVE_OPTIONS),
    'grpc.max_receive_message_length': 16 * 1024 * 1024,
    'grpc-node.flow_control_window': FLOW_CONTROL_WINDOW_BYTES,
    // Reconnect quickly after a service restarts (the default backoff grows to 120 s).
    'grpc.initial_reconnect_backoff_ms': INITIAL_RECONNECT_BACKOFF_MS,
    'grpc.max_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS,
    // Channelz bookkeeping costs CPU on every call. Retries stay on, but with no retry policy in the service config
    // they are only the transparent ones: a call the server refused unprocessed (a connection closed at its maximum
    // age, GOAWAY, while the call was on its way) is sent again once instead of failing.
    'grpc.enable_channelz': 0,
    'grpc.enable_retries': 1,
    // Every address the name resolves to gets calls in turn: behind a headless Kubernetes Service that is every
    // replica, so load spreads per call rather than per connection. One address behaves as before.
    'grpc.service_config': JSON.stringify({
      loadBalancingConfig: [{ round_robin: {} }],
      methodConfig: retryMethodConfig(Client.service, options.rules),
    }),
    ...(options.minResolveIntervalMs !== undefined
      ? { 'grpc.dns_min_time_between_resolutions_ms': options.minResolveIntervalMs }
      : {}),
  });
  // The half-open probe: any answer of the server's health service (even NOT_SERVING) shows it answers again.
  const probe = () =>
    new Promise<boolean>((resolve) => {
      const check = HEALTH_SERVICE.Check!;
      client.makeUnaryRequest(
        check.path,
        check.requestSerialize,
        check.responseDeserialize,
        { service: '' },
        new grpc.Metadata(),
        { deadline: Date.now() + Math.min(HALF_OPEN_RETRY_AFTER_MS, options.defaultDeadlineMs) },
        (error) => resolve(error === null || !notAnswering(error)),
      );
    });
  const circuit = new CircuitBreaker(options.circuitBreaker ?? { failureThreshold: 0, openMs: 0 }, probe, (change) => {
    options.metrics?.grpcClientCircuitState.set(circuitLabels, CIRCUIT_STATE_VALUE[change.to]);
    options.metrics?.grpcClientCircuitTransitions.inc({ ...circuitLabels, to: change.to });
    const fields = {
      target: address,
      grpc_service: serviceName,
      circuit_from: change.from,
      circuit_to: change.to,
      consecutive_failures: change.consecutiveFailures,
      ...(change.openMs !== undefined ? { open_ms: change.openMs } : {}),
    };
    if (change.to === 'open') options.logger?.warn(fields, 'gRPC circuit state changed');
    else options.logger?.info(fields, 'gRPC circuit state changed');
  });
  const wrapped: Record<string, unknown> = {
    close: () => client.close(),
    channel: client,
    circuit,
  };
  for (const [key, method] of Object.entries(Client.service)) {
    if (method.requestStream || method.responseStream) continue;
    const [, service = '', name = key] = /^\/([^/]+)\/([^/]+)$/.exec(method.path) ?? [];
    const labels = { grpc_service: service, grpc_method: name };
    const fn = (client as unknown as Record<string, UnaryMethod<unknown, unknown>>)[key]!.bind(client);
    const methodRules = (options.rules ?? METHOD_RULES)[method.path];
    const resendable = methodRules !== undefined && isRetried(methodRules);
    wrapped[key] = (request: unknown, settings?: CallSettings) =>
      new Promise((resolve, reject) => {
        const deadlineMs = settings?.deadlineMs ?? options.defaultDeadlineMs;
        // Longer than a server's grace covers: the call could be cut off on a connection closed for its age.
        if (deadlineMs > LONGEST_CALL_DEADLINE_MS) {
          reject(new Error(`${service}/${name}: a deadline may not exceed ${LONGEST_CALL_DEADLINE_MS} ms`));
          return;
        }
        if (options.available && !options.available()) {
          options.metrics?.grpcClientHandled.inc({ ...labels, grpc_code: 'UNAVAILABLE' });
          reject(ofCall(knownDown(service), labels));
          return;
        }
        const admission = circuit.admit();
        if (!admission.admitted) {
          options.metrics?.grpcClientHandled.inc({ ...labels, grpc_code: 'UNAVAILABLE' });
          reject(ofCall(circuitOpen(service, admission.retryAfterMs), labels));
          return;
        }
        const metadata = new grpc.Metadata();
        if (settings?.requestId) metadata.set(REQUEST_ID_METADATA_KEY, settings.requestId);
        if (settings?.organizationId !== undefined)
          metadata.set(ORGANIZATION_METADATA_KEY, String(settings.organizationId));
        if (settings?.endUser) {
          metadata.set(END_USER_METADATA_KEY, settings.endUser.token);
          metadata.set(END_USER_CERT_METADATA_KEY, settings.endUser.cert);
        }
        let span: Span | undefined;
        if (settings?.trace && tracingEnabled()) {
          const started = startSpan(`${service}/${name}`, SpanKind.CLIENT, settings.trace, {
            'rpc.system': 'grpc',
            'rpc.service': service,
            'rpc.method': name,
          });
          span = started.span;
          injectContext(started.context, (key, value) => metadata.set(key, value));
        }
        const started = process.hrtime.bigint();
        const deadline = Date.now() + deadlineMs;
        const finish = (error: grpc.ServiceError | null, response: unknown) => {
          if (span) endSpan(span, error ?? undefined, { 'rpc.grpc.status_code': error ? error.code : 0 });
          if (error) reject(ofCall(error, labels));
          else resolve(response);
        };
        const send = (again: boolean) => {
          // grpc-js captures the caller's stack on every call (a new Error, kept for the message of a call that
          // fails): 54–61 µs a call in these processes (docs/benchmarks.md, "The caller's stack on every call"). A
          // failed call names its service and method instead (ofCall), so no stack is captured while the call starts;
          // grpc-node's pull request 3083 proposes a channel option for this.
          const stackTraceLimit = Error.stackTraceLimit;
          Error.stackTraceLimit = 0;
          try {
            fn(request, metadata, { deadline }, (error, response) => {
              if (options.metrics) {
                const code = error ? (grpc.status[error.code] ?? String(error.code)) : 'OK';
                options.metrics.grpcClientHandled.inc({ ...labels, grpc_code: code });
                options.metrics.grpcClientDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
              }
              // A read sent once more counts for the circuit by its second call: a connection that ended under
              // several calls at once (the ping after its GOAWAY) is no failure of the downstream, and would otherwise
              // open the circuit and refuse every call for its open time.
              if (error && !again && resendable && droppedUnder(error) && Date.now() < deadline) {
                options.metrics?.grpcClientResent.inc(labels);
                send(true);
                return;
              }
              circuit.record(error !== null && notAnswering(error));
              finish(error, response);
            });
          } catch (err) {
            Error.stackTraceLimit = stackTraceLimit;
            // Never sent (e.g. a request that does not serialise): it says nothing about the downstream. Its stack,
            // not captured when it was thrown, is this call's.
            if (err instanceof Error) Error.captureStackTrace(err);
            if (!again) {
              if (span) endSpan(span, err);
              throw err;
            }
            finish(err as grpc.ServiceError, undefined);
          } finally {
            Error.stackTraceLimit = stackTraceLimit;
          }
        };
        send(false);
      });
  }
  return wrapped as PromiseClient<C>;
}

/** The fully qualified name of a generated client's service (`mileage.users.v1.UsersService`), as health checks use. */
export function grpcServiceName(definition: grpc.ServiceDefinition): string {
  const paths = Object.values(definition).map((method) => /^\/([^/]+)\//.exec(method.path)?.[1]);
  const name = paths[0];
  if (!name || paths.some((p) => p !== name)) throw new Error('a generated client names exactly one service');
  return name;
}

/**
 * A failure of the downstream itself, for the circuit breaker: UNAVAILABLE (no connection, a connection dropped) or
 * DEADLINE_EXCEEDED (no answer in time), raised by the client. A status a server's handler answered (it carries the
 * platform's details: e.g. UNAVAILABLE while that service's database is down, which it already answers at once) and
 * every business error (NOT_FOUND, INVALID_ARGUMENT, ...) show a downstream that answers.
 */
function notAnswering(error: grpc.ServiceError): boolean {
  return unanswered(error) || (error.code === grpc.status.DEADLINE_EXCEEDED && !hasStatusDetails(error));
}

/**
 * A call that got no answer from any server: UNAVAILABLE raised by the client (the connection failed or died under
 * it, or it was never sent), not a status a handler answered. A read that failed so may be sent once more.
 */
export function unanswered(error: unknown): boolean {
  const e = error as Partial<grpc.ServiceError>;
  return e?.code === grpc.status.UNAVAILABLE && !hasStatusDetails(e);
}

/**
 * A call whose connection ended under it (grpc-js's "Connection dropped"), its answer perhaps begun. grpc-js retries a
 * read only until an answer begins (its retry policy, retry.ts); a read dropped later, or whose retry met a second
 * closing connection, is sent once more by the client wrapper, as a new call. Seen in benches: a connection closed at
 * its maximum age ended the calls still on it at the next keepalive ping (grpc/grpc-node#3068, connection-age.test.ts).
 */
function droppedUnder(error: grpc.ServiceError): boolean {
  return unanswered(error) && error.details === 'Connection dropped';
}

/** The reason (google.rpc.ErrorInfo) of a call refused by an open circuit. */
export const CIRCUIT_OPEN_REASON = 'CIRCUIT_OPEN';

/** A failed call's error, with the method it failed (logs name the dependency: `grpcCallOf`). */
export interface FailedCall extends grpc.ServiceError {
  grpcService: string;
  grpcMethod: string;
}

function ofCall(error: grpc.ServiceError, call: { grpc_service: string; grpc_method: string }): FailedCall {
  return Object.assign(error, { grpcService: call.grpc_service, grpcMethod: call.grpc_method });
}

/** The service and method whose call failed with `err`, as log fields; empty for any other error. */
export function grpcCallOf(err: unknown): { grpc_service?: string; grpc_method?: string } {
  const { grpcService, grpcMethod } = (err ?? {}) as Partial<FailedCall>;
  return typeof grpcService === 'string' && typeof grpcMethod === 'string'
    ? { grpc_service: grpcService, grpc_method: grpcMethod }
    : {};
}

/**
 * A failed call's log fields, the one shape every process logs them in: its service and method (grpcCallOf), its
 * status code's name and its details. Empty for an error that is not a gRPC status.
 */
export function grpcFailureOf(err: unknown): {
  grpc_service?: string;
  grpc_method?: string;
  grpc_code?: string;
  grpc_details?: string;
} {
  const { code, details } = (err ?? {}) as { code?: unknown; details?: unknown };
  if (typeof code !== 'number') return {};
  return {
    ...grpcCallOf(err),
    grpc_code: grpc.status[code] ?? String(code),
    grpc_details: typeof details === 'string' ? details : '',
  };
}

/** The error of a call refused by an open (or probing) circuit: UNAVAILABLE with a RetryInfo of the time left. */
function circuitOpen(service: string, retryAfterMs: number): grpc.ServiceError {
  const details = `${service} is unavailable (circuit open: it did not answer recent calls)`;
  const status = toStatusObject(
    new AppError(grpc.status.UNAVAILABLE, details, { reason: CIRCUIT_OPEN_REASON, retryAfterMs }),
  );
  return Object.assign(new Error(`${grpc.status.UNAVAILABLE} UNAVAILABLE: ${details}`), {
    code: grpc.status.UNAVAILABLE,
    details,
    metadata: status.metadata ?? new grpc.Metadata(),
  });
}

/** The error of a call not attempted because its service's health check fails. */
function knownDown(service: string): grpc.ServiceError {
  const details = `${service} is unavailable (its health check fails)`;
  return Object.assign(new Error(`${grpc.status.UNAVAILABLE} UNAVAILABLE: ${details}`), {
    code: grpc.status.UNAVAILABLE,
    details,
    metadata: new grpc.Metadata(),
  });
}

/**
 * A persistent client of a server's grpc.health.v1 service, for dependency checks. Like the service clients it
 * balances over every address the name resolves to, so it judges the service, not one replica.
 */
export class HealthClient {
  private readonly client: grpc.Client & {
    check(
      req: { service: string },
      md: grpc.Metadata,
      opts: Partial<grpc.CallOptions>,
      cb: (e: grpc.ServiceError | null, r?: { status: string }) => void,
    ): void;
  };

  constructor(
    readonly address: string,
    credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  ) {
    const Ctor = grpc.makeClientConstructor(HEALTH_SERVICE, 'grpc.health.v1.Health');
    this.client = new Ctor(address, credentials, {
      ...KEEPALIVE_OPTIONS,
      'grpc.initial_reconnect_backoff_ms': INITIAL_RECONNECT_BACKOFF_MS,
      'grpc.max_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS,
      'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
    }) as unknown as HealthClient['client'];
  }

  /** True when `service` (default: the whole server) answers SERVING before the deadline. */
  check(service = '', deadlineMs = 1_000): Promise<boolean> {
    return new Promise((resolve) => {
      this.client.check({ service }, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (err, res) =>
        resolve(!err && res?.status === 'SERVING'),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}
