import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { PROTO_ROOT, type Component, type MethodRules } from '@mileage/proto';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import { randomUUID } from 'node:crypto';
import { isAcceptableRequestId, REQUEST_ID_METADATA_KEY } from '../telemetry/context';
import { toAppError, toStatusObject, type AppError } from './errors';
import type { EndUserVerifier } from './end-user';
import type { CallerIdentities } from './grpc-authz';
import { endUserBinding } from './interceptors/end-user';
import { callerIdentity } from './interceptors/identity';
import { chain, methodLabels, rulesOf, type InboundCall, type Interceptor } from './interceptors/interceptor';
import { organizationScope } from './interceptors/organization';
import type { GrpcTls } from './grpc-tls';
import type { Logger } from '../telemetry/logger';
import type { Metrics } from '../telemetry/metrics';
import { endSpan, extractContext, SpanKind, startSpan, tracingEnabled, type TraceContext } from '../telemetry/tracing';

export interface CallContext {
  metadata: grpc.Metadata;
  /** The caller's request id (or a new one): put it on every log line about this call. */
  requestId: string;
  /** This call's server span context (undefined when tracing is off): parent of its SQL spans. */
  trace?: TraceContext;
  /** Milliseconds left before the caller's deadline (Infinity when it set none). */
  remainingMs(): number;
  /** Aborted when the caller cancels or its deadline passes. */
  signal: AbortSignal;
  /**
   * The organization the call acts inside, as its method's rules establish it (grpc/interceptors/organization.ts): always set for
   * a method whose organization is `required`, set when named for `across-unless-named`, never for `none`.
   */
  organizationId?: number;
}

export type UnaryHandler<Req, Res> = (request: Req, ctx: CallContext) => Promise<Res>;

/** The handlers of one service, written as async functions of (request, context). */
export type Handlers<S extends grpc.UntypedServiceImplementation> = {
  [K in keyof S as string extends K ? never : K]: S[K] extends grpc.handleUnaryCall<infer Req, infer Res>
    ? UnaryHandler<Req, Res>
    : never;
};

export interface ServiceRegistration {
  definition: grpc.ServiceDefinition;
  handlers: Record<string, UnaryHandler<never, unknown>>;
  /** Its methods' rules by path: default the generated ones of proto/ (their `.proto` options). */
  rules?: Readonly<Record<string, MethodRules<Component>>>;
}

/** A call through the interceptors, with what its handler is called with. */
interface AdaptedCall extends InboundCall {
  ctx: CallContext;
  /** failFast's answer: the call fails with it once through the interceptors. */
  refusal: AppError | undefined;
}

/**
 * Adapts async handlers to grpc-js: request id and logging context, RED metrics, and error mapping
 * (AppError → status with details; anything else → INTERNAL, logged with its stack here only). Before its handler a
 * call passes the interceptors of its method's rules (its `.proto` options): with `callers` (mutual TLS) the caller's
 * identity, with `endUsers` the end user it acts for, and always the organization it acts inside.
 */
export function adaptService(
  definition: grpc.ServiceDefinition,
  handlers: Record<string, UnaryHandler<never, unknown>>,
  deps: {
    logger: Logger;
    metrics: Metrics;
    failFast?: () => AppError | undefined;
    callers?: CallerIdentities;
    endUsers?: EndUserVerifier;
    rules?: Readonly<Record<string, MethodRules<Component>>>;
  },
): grpc.UntypedServiceImplementation {
  const interceptors: Interceptor[] = [
    ...(deps.callers ? [callerIdentity({ ...deps, identities: deps.callers })] : []),
    ...(deps.callers && deps.endUsers ? [endUserBinding({ ...deps, verifier: deps.endUsers })] : []),
    organizationScope(),
  ];
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const [key, method] of Object.entries(definition)) {
    const handler = handlers[key] as UnaryHandler<unknown, unknown> | undefined;
    if (!handler) throw new Error(`no handler for ${method.path}`);
    const rules = rulesOf(method.path, deps.rules);
    // The interceptors pass the call they were given on: the handler gets it back with what they established.
    const run = chain(interceptors, (passed) => {
      const { ctx, refusal } = passed as AdaptedCall;
      if (refusal) throw refusal;
      if (passed.organizationId !== undefined) ctx.organizationId = passed.organizationId;
      return handler(passed.request, ctx);
    });
    const labels = methodLabels(method.path);
    const { grpc_service: service, grpc_method: name } = labels;
    const unary: grpc.handleUnaryCall<unknown, unknown> = (call, callback) => {
      const started = process.hrtime.bigint();
      const incomingId = call.metadata.get(REQUEST_ID_METADATA_KEY)[0];
      const requestId = isAcceptableRequestId(incomingId) ? incomingId : randomUUID();
      const deadline = call.getDeadline();
      const deadlineMs =
        deadline instanceof Date ? deadline.getTime() : typeof deadline === 'number' ? deadline : Infinity;
      // Created only when a handler asks for it: most never do, and an AbortController per call is not free.
      let abort: AbortController | undefined;
      let cancelled = false;
      // grpc-js emits 'cancelled' after every call, answered ones included (once its status is out): only a call
      // still unanswered is cancelled, and aborting an answered one's signal would build a DOMException for nothing.
      let answered = false;
      call.once('cancelled', () => {
        if (answered) return;
        cancelled = true;
        abort?.abort();
      });
      const serverSpan = tracingEnabled()
        ? startSpan(
            `${service}/${name}`,
            SpanKind.SERVER,
            extractContext(call.metadata.getMap() as Record<string, string>),
            {
              'rpc.system': 'grpc',
              'rpc.service': service,
              'rpc.method': name,
            },
          )
        : undefined;
      const finish = (code: grpc.status) => {
        if (serverSpan)
          endSpan(serverSpan.span, code === grpc.status.OK ? undefined : grpc.status[code], {
            'rpc.grpc.status_code': code,
          });
        deps.metrics.grpcServerHandled.inc({ ...labels, grpc_code: grpc.status[code] ?? String(code) });
        deps.metrics.grpcServerDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
      };
      {
        const ctx: CallContext = {
          metadata: call.metadata,
          requestId,
          ...(serverSpan ? { trace: serverSpan.context } : {}),
          remainingMs: () => deadlineMs - Date.now(),
          get signal() {
            abort ??= new AbortController();
            if (cancelled) abort.abort();
            return abort.signal;
          },
        };
        const inbound: AdaptedCall = {
          path: method.path,
          rules,
          request: call.request,
          metadata: call.metadata,
          requestId,
          peer: call,
          ctx,
          refusal: deps.failFast?.(),
        };
        let answer: Promise<unknown>;
        try {
          answer = run(inbound);
        } catch (err) {
          answer = Promise.reject(err);
        }
        answer.then(
          (response) => {
            answered = true;
            finish(grpc.status.OK);
            callback(null, response);
          },
          (err: unknown) => {
            answered = true;
            const { appError, unexpected } = toAppError(err);
            if (unexpected)
              deps.logger.error({ err, grpc_method: method.path, request_id: requestId }, 'handler failed');
            finish(appError.code);
            callback(toStatusObject(appError));
          },
        );
      }
    };
    implementation[key] = unary;
  }
  return implementation;
}

export interface GrpcServerHandle {
  server: grpc.Server;
  port: number;
  health: HealthImplementation;
  /**
   * Reports the registered services SERVING or NOT_SERVING on the health service (callers that check them fail
   * fast). The whole server ("", what Kubernetes probes) stays SERVING until shutdown: a dependency never takes a
   * replica out of its endpoints.
   */
  setServing(serving: boolean): void;
  /** Stops accepting calls, lets in-flight calls finish (up to timeoutMs), then forces the rest. */
  shutdown(timeoutMs: number): Promise<void>;
}

/**
 * Starts a gRPC server with the standard health service (grpc.health.v1), the registered services and, only when
 * `reflection` is true, server reflection for the given proto files.
 */
export async function startGrpcServer(options: {
  address: string;
  services: ServiceRegistration[];
  protoFiles: string[];
  logger: Logger;
  metrics: Metrics;
  /**
   * Connections are closed (GOAWAY) after this long, ±10 % (grpc-js), so clients resolve the name again and
   * spread over replicas added since they connected. Unset: connections live for ever.
   */
  maxConnectionAgeMs?: number;
  /** How long calls in flight on a connection closed for its age may still run. */
  maxConnectionAgeGraceMs?: number;
  /** When it returns an error, every call fails with it at once (e.g. while the database is known to be down). */
  failFast?: () => AppError | undefined;
  /**
   * Serve gRPC server reflection (grpc.reflection.v1 and v1alpha): anyone who reaches the port can then list every
   * service and method. Off unless asked for (a service's GRPC_REFLECTION).
   */
  reflection?: boolean;
  /**
   * grpcTls(config): mutual TLS (client certificates required) and per-method authorization of the callers when
   * configured; default plaintext, every method open.
   */
  tls?: GrpcTls;
}): Promise<GrpcServerHandle> {
  const server = new grpc.Server({
    ...(options.maxConnectionAgeMs ? { 'grpc.max_connection_age_ms': options.maxConnectionAgeMs } : {}),
    ...(options.maxConnectionAgeGraceMs ? { 'grpc.max_connection_age_grace_ms': options.maxConnectionAgeGraceMs } : {}),
    'grpc.max_receive_message_length': 4 * 1024 * 1024,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.enable_channelz': 0,
  });
  const serviceNames: string[] = [];
  for (const registration of options.services) {
    server.addService(
      registration.definition,
      adaptService(registration.definition, registration.handlers, {
        ...options,
        ...(registration.rules && { rules: registration.rules }),
        ...(options.tls?.callers && { callers: options.tls.callers }),
        ...(options.tls?.endUsers && { endUsers: options.tls.endUsers }),
      }),
    );
    const first = Object.values(registration.definition)[0];
    if (first) serviceNames.push(first.path.split('/')[1] ?? '');
  }
  const health = new HealthImplementation(
    Object.fromEntries([['', 'SERVING'], ...serviceNames.map((n) => [n, 'SERVING'])]),
  );
  health.addToServer(server);
  if (options.reflection) {
    const packageDefinition = protoLoader.loadSync([...options.protoFiles, healthProtoPath], {
      includeDirs: [PROTO_ROOT],
      keepCase: true,
    });
    new ReflectionService(packageDefinition).addToServer(server);
  }

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      options.address,
      options.tls?.serverCredentials() ?? grpc.ServerCredentials.createInsecure(),
      (err, boundPort) => (err ? reject(err) : resolve(boundPort)),
    );
  });
  options.logger.info(
    {
      address: options.address,
      port,
      services: serviceNames,
      reflection: Boolean(options.reflection),
      tls: options.tls?.enabled ?? false,
    },
    'gRPC server listening',
  );

  return {
    server,
    port,
    health,
    setServing: (serving) => {
      for (const name of serviceNames) health.setStatus(name, serving ? 'SERVING' : 'NOT_SERVING');
    },
    shutdown: (timeoutMs) =>
      new Promise<void>((resolve) => {
        for (const name of ['', ...serviceNames]) health.setStatus(name, 'NOT_SERVING');
        const timer = setTimeout(() => {
          options.logger.warn({ timeoutMs }, 'in-flight gRPC calls did not finish in time; forcing shutdown');
          server.forceShutdown();
          resolve();
        }, timeoutMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
