import * as http from 'node:http';
import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  Registry,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';

/**
 * One read shared by the gauges it feeds, each gauge's `collect` asking for it: a scrape starts every collect at once,
 * so they share the read under way, and the next scrape reads anew. (A gauge set inside another's collect instead shows
 * the scrape before's values: prom-client renders it beside the collect, not after.)
 */
export function sharedWhileReading<T>(read: () => Promise<T>): () => Promise<T> {
  let reading: Promise<T> | undefined;
  return () =>
    (reading ??= read().finally(() => {
      reading = undefined;
    }));
}

/** The longest a gauge's read at scrape time may take before the scrape goes on without it (below Prometheus's 10 s). */
const COLLECT_TIMEOUT_MS = 2_000;

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * How often the event-loop lag (`nodejs_eventloop_lag_*`) is sampled. prom-client's 10 ms wakes an idle process 100
 * times a second: ~11 ms of CPU per second on this machine's cores, a process's whole idle cost, against ~1.5 ms at
 * 100 ms. A stall of 100 ms or more is always seen; a shorter one in proportion to its length.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/** A gRPC call's labels, the same on the server and the client side; its outcome adds the status code. */
const GRPC_CALL = ['grpc_service', 'grpc_method'] as const;
const GRPC_OUTCOME = [...GRPC_CALL, 'grpc_code'] as const;

/**
 * One registry per process: default process metrics plus RED metrics for HTTP and gRPC and the
 * database pool gauges. Names follow Prometheus conventions (base units, `_total` counters).
 */
export class Metrics {
  readonly registry = new Registry();

  private readonly collectFailures = this.counter({
    name: 'metrics_collect_failures_total',
    help: 'Scrapes at which a gauge read at scrape time (from the database) failed or timed out: it showed its last values.',
    labelNames: ['metric'] as const,
  });

  readonly httpRequestDuration = this.histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Duration of HTTP requests handled, by method, route template and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
  });

  readonly grpcServerHandled = this.counter({
    name: 'grpc_server_handled_total',
    help: 'gRPC calls completed on the server, by service, method and status code.',
    labelNames: GRPC_OUTCOME,
  });

  readonly grpcServerCallsDenied = this.counter({
    name: 'grpc_server_calls_denied_total',
    help: "gRPC calls refused (PERMISSION_DENIED) because the caller's identity may not call the method, by service, method and caller (a component, or unknown).",
    labelNames: [...GRPC_CALL, 'caller'] as const,
  });

  readonly grpcServerDuration = this.histogram({
    name: 'grpc_server_handling_seconds',
    help: 'Time to handle a gRPC call on the server, by service and method.',
    labelNames: GRPC_CALL,
  });

  readonly grpcClientHandled = this.counter({
    name: 'grpc_client_handled_total',
    help: 'gRPC calls completed by this process as a client, by service, method and status code.',
    labelNames: GRPC_OUTCOME,
  });

  readonly grpcClientResent = this.counter({
    name: 'grpc_client_resent_total',
    help: 'Reads this process sent once more after a connection dropped under them (grpc-js cannot retry a call once answered in part), by service and method.',
    labelNames: GRPC_CALL,
  });

  readonly grpcClientDuration = this.histogram({
    name: 'grpc_client_handling_seconds',
    help: 'Time from sending a gRPC call to its completion, by service and method.',
    labelNames: GRPC_CALL,
  });

  readonly grpcClientCircuitState = this.gauge({
    name: 'grpc_client_circuit_state',
    help: 'Circuit breaker of this process towards a downstream gRPC service: 0 closed, 1 half-open (probing), 2 open (calls refused at once).',
    labelNames: ['target', 'grpc_service'] as const,
  });

  readonly grpcClientCircuitTransitions = this.counter({
    name: 'grpc_client_circuit_transitions_total',
    help: 'State changes of the circuit breaker towards a downstream gRPC service, by the state entered.',
    labelNames: ['target', 'grpc_service', 'to'] as const,
  });

  readonly dependencyUp = this.gauge({
    name: 'dependency_up',
    help: 'Whether a dependency (database, downstream service, Redis) answers its health check: 1 up, 0 down.',
    labelNames: ['dependency'] as const,
  });

  constructor(
    readonly service: string,
    /** How long a gauge's read at scrape time may take (tests shorten it). */
    private readonly collectTimeoutMs = COLLECT_TIMEOUT_MS,
  ) {
    this.registry.setDefaultLabels({ service });
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  }

  /**
   * A metric of this process's registry, created by the first caller that names it and shared by the next ones
   * (several relays or workers of one process, each test's service in one test process). Histograms default to
   * latency buckets in seconds.
   */
  histogram<L extends string = string>(config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L> {
    return this.shared(
      config.name,
      () => new Histogram({ buckets: LATENCY_BUCKETS, ...config, registers: [this.registry] }),
    );
  }

  counter<L extends string = string>(config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
    return this.shared(config.name, () => new Counter({ ...config, registers: [this.registry] }));
  }

  /**
   * A gauge; one whose `collect` reads what may be down or slow (the database) keeps its last values when that read
   * fails or takes over COLLECT_TIMEOUT_MS, counted in `metrics_collect_failures_total`: prom-client fails the whole
   * scrape on one rejected collect, which would hide every other metric (`dependency_up` among them) just then.
   */
  gauge<L extends string = string>(config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L> {
    const collect = config.collect;
    if (!collect) return this.shared(config.name, () => new Gauge({ ...config, registers: [this.registry] }));
    const failures = this.collectFailures;
    const timeoutMs = () => this.collectTimeoutMs;
    return this.shared(
      config.name,
      () =>
        new Gauge({
          ...config,
          registers: [this.registry],
          async collect() {
            let timer: NodeJS.Timeout | undefined;
            const late = new Promise<never>((_, reject) => {
              timer = setTimeout(() => reject(new Error('timed out')), timeoutMs());
            });
            try {
              await Promise.race([collect.call(this), late]);
            } catch {
              failures.inc({ metric: config.name });
            } finally {
              clearTimeout(timer);
            }
          },
        }),
    );
  }

  private shared<T>(name: string, create: () => T): T {
    return (this.registry.getSingleMetric(name) as T | undefined) ?? create();
  }

  /** Exposes a connection pool's state as `db_pool_connections{pool,state}`, read at scrape time. */
  registerPool(pool: string, read: () => { used: number; idle: number; pending: number }): void {
    new Gauge({
      name: 'db_pool_connections',
      help: 'Database connections in the pool by state (used, idle) and callers waiting for one (pending).',
      labelNames: ['pool', 'state'] as const,
      registers: [this.registry],
      collect() {
        const s = read();
        this.set({ pool, state: 'used' }, s.used);
        this.set({ pool, state: 'idle' }, s.idle);
        this.set({ pool, state: 'pending' }, s.pending);
      },
    });
  }

  /**
   * Serves GET /metrics on its own port, away from the public listener, and any extra JSON documents given
   * (e.g. a service's /healthz/dependencies), and probes: paths that answer 200 "ok" while their check holds and
   * 503 otherwise (a service's /healthz and /readyz, for HTTP probes where the gRPC port needs mutual TLS).
   */
  async listen(
    port: number,
    host = '127.0.0.1',
    documents: Record<string, () => unknown> = {},
    probes: Record<string, () => boolean> = {},
  ): Promise<http.Server> {
    const server = http.createServer((req, res) => {
      const path = req.url?.split('?')[0] ?? '';
      const probe = req.method === 'GET' && Object.hasOwn(probes, path) ? probes[path] : undefined;
      if (probe) {
        const ok = probe();
        res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'not serving\n');
        return;
      }
      const document = req.method === 'GET' && Object.hasOwn(documents, path) ? documents[path] : undefined;
      if (document) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(document()));
        return;
      }
      if (req.method === 'GET' && path === '/metrics') {
        this.registry
          .metrics()
          .then((body) => {
            res.writeHead(200, { 'content-type': this.registry.contentType });
            res.end(body);
          })
          .catch(() => {
            res.writeHead(500).end();
          });
        return;
      }
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    return server;
  }
}
