import type { Knex } from 'knex';
import { droppedReadAttempts, readWithRetry } from '../database/db';
import { errors, type AppError } from '../grpc/errors';
import type { HealthClient } from '../grpc/grpc-client';
import type { Logger } from '../telemetry/logger';
import type { Metrics } from '../telemetry/metrics';

/** One thing a process calls and may find down: a database, a gRPC service, Redis. */
export interface DependencyCheck {
  name: string;
  /** Resolves true when the dependency answers; false or a rejection counts as a failure. */
  check(timeoutMs: number): Promise<boolean>;
}

export interface DependencyState {
  up: boolean;
  /** When `up` last changed (or monitoring started), ISO 8601. */
  since: string;
  /** Failed checks in a row (0 while up). */
  consecutiveFailures: number;
  /** When it was last checked (null before the first check: up is then an assumption). */
  checkedAt: string | null;
}

export interface DependencyReport {
  /** `ok` when every dependency is up, else `degraded`. */
  status: 'ok' | 'degraded';
  dependencies: Record<string, DependencyState>;
}

export interface DependencyMonitorOptions {
  checks: DependencyCheck[];
  metrics?: Metrics;
  logger?: Logger;
  /** Pause between rounds of checks. */
  intervalMs?: number;
  /** Bound on one check: a frozen dependency counts as down after this long. */
  timeoutMs?: number;
  /**
   * Failed checks in a row before a dependency counts as down: with several replicas behind one name, one bad
   * replica fails only every other check and does not mark the whole service down.
   */
  failuresBeforeDown?: number;
  /** Called when a dependency goes down or comes back. */
  onChange?(name: string, up: boolean): void;
}

/**
 * Watches a process's dependencies in the background. Their state is reported (a JSON report, the
 * `dependency_up` gauge) and lets callers fail fast, but never decides readiness or liveness: a pod whose
 * database or downstream service is down can still serve everything else, and must stay in its Service's
 * endpoints to do so. A dependency counts as up until checks say otherwise.
 */
export class DependencyMonitor {
  private readonly states = new Map<string, DependencyState>();
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> = Promise.resolve();
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private readonly failuresBeforeDown: number;

  constructor(private readonly options: DependencyMonitorOptions) {
    this.intervalMs = options.intervalMs ?? 2_000;
    this.timeoutMs = options.timeoutMs ?? 1_000;
    this.failuresBeforeDown = options.failuresBeforeDown ?? 2;
    const now = new Date().toISOString();
    for (const { name } of options.checks) {
      this.states.set(name, { up: true, since: now, consecutiveFailures: 0, checkedAt: null });
      options.metrics?.dependencyUp.set({ dependency: name }, 1);
    }
  }

  /** Checks now, then every intervalMs until stop(). */
  start(): this {
    if (this.timer) return this;
    const tick = () => {
      this.round = this.checkNow().finally(() => {
        if (this.timer) this.timer = setTimeout(tick, this.intervalMs).unref();
      });
    };
    this.timer = setTimeout(tick, 0).unref();
    return this;
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.round;
  }

  /** One round of every check, in parallel. */
  async checkNow(): Promise<void> {
    await Promise.all(
      this.options.checks.map(async ({ name, check }) => {
        let timer: NodeJS.Timeout | undefined;
        const ok = await Promise.race([
          check(this.timeoutMs).catch(() => false),
          new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), this.timeoutMs))),
        ]);
        clearTimeout(timer);
        this.record(name, ok);
      }),
    );
  }

  isUp(name: string): boolean {
    return this.states.get(name)?.up ?? true;
  }

  report(): DependencyReport {
    const dependencies = Object.fromEntries([...this.states].map(([name, state]) => [name, { ...state }]));
    return {
      status: [...this.states.values()].every((s) => s.up) ? 'ok' : 'degraded',
      dependencies,
    };
  }

  private record(name: string, ok: boolean): void {
    const state = this.states.get(name)!;
    state.checkedAt = new Date().toISOString();
    state.consecutiveFailures = ok ? 0 : state.consecutiveFailures + 1;
    const up = ok || (state.up && state.consecutiveFailures < this.failuresBeforeDown);
    if (up === state.up) return;
    state.up = up;
    state.since = new Date().toISOString();
    this.options.metrics?.dependencyUp.set({ dependency: name }, up ? 1 : 0);
    if (up) this.options.logger?.info({ dependency: name }, 'dependency is back');
    else this.options.logger?.warn({ dependency: name }, 'dependency is down');
    this.options.onChange?.(name, up);
  }
}

/**
 * A PostgreSQL check through the service's own pool (so it also sees an exhausted or broken pool). A pooled session
 * that turns out to have ended (a pooler, an operator or a failover terminated it) is not an outage: the check runs
 * again on another connection, as a read does (readWithRetry), and fails only when the database cannot be reached.
 */
export function databaseCheck(knex: Knex, name = 'postgres'): DependencyCheck {
  return {
    name,
    check: () => readWithRetry(async () => (await knex.raw('SELECT 1'), true), droppedReadAttempts(knex)),
  };
}

/** A gRPC service's health (grpc.health.v1) for one of its services. */
export function grpcHealthCheck(name: string, client: HealthClient, service: string): DependencyCheck {
  return { name, check: (timeoutMs) => client.check(service, timeoutMs) };
}

/** A gRPC server's failFast: UNAVAILABLE at once while the monitor says the database is down. */
export function whileDatabaseDown(monitor: DependencyMonitor, name = 'postgres'): () => AppError | undefined {
  return () =>
    monitor.isUp(name) ? undefined : errors.unavailable('the database is unavailable', 'DATABASE_UNAVAILABLE');
}
