/**
 * A circuit breaker for the calls of one client to one downstream (a gRPC target and service).
 *
 * - closed: calls go through; `failureThreshold` failures in a row (a success resets the count) open it.
 * - open: calls are refused at once for `openMs`.
 * - half-open: the first call after `openMs` starts the probe (the client's health check, never a user's call) and
 *   is refused like every call while it runs; the probe's success closes the circuit, its failure opens it again for
 *   another `openMs`. No user's request waits out a deadline to find out whether the downstream is back.
 *
 * What counts as a failure is the caller's decision (`record`): for gRPC, a downstream that does not answer
 * (UNAVAILABLE or DEADLINE_EXCEEDED raised by the client), never an answer the downstream gave.
 */
export type CircuitState = 'closed' | 'half_open' | 'open';

/** The `grpc_client_circuit_state` gauge's value of each state. */
export const CIRCUIT_STATE_VALUE: Readonly<Record<CircuitState, number>> = { closed: 0, half_open: 1, open: 2 };

export interface CircuitBreakerOptions {
  /** Failures in a row that open the circuit; 0 turns the breaker off (every call goes through). */
  failureThreshold: number;
  /** How long an open circuit refuses calls before it probes the downstream. */
  openMs: number;
  /** The clock (tests advance their own). */
  now?: () => number;
  /** Told of every state change after the breaker's own handler (tests wait on it instead of polling). */
  onTransition?: (transition: CircuitTransition) => void;
}

export interface CircuitTransition {
  from: CircuitState;
  to: CircuitState;
  /** Failures in a row that led to this transition (0 when closing). */
  consecutiveFailures: number;
  /** When opening: how long calls are refused. */
  openMs?: number;
}

/** The admission of one call: go ahead, or refused for `retryAfterMs`. */
export type Admission = { admitted: true } | { admitted: false; retryAfterMs: number };

/**
 * How long calls refused while the probe runs are told to wait, and so the probe's own deadline (grpc-client.ts): the
 * probe settles within it.
 */
export const HALF_OPEN_RETRY_AFTER_MS = 1_000;

/** Whether the downstream answers: true closes the circuit. A probe that throws counts as false. */
export type CircuitProbe = () => Promise<boolean>;

export class CircuitBreaker {
  private current: CircuitState = 'closed';
  private failures = 0;
  private openUntil = 0;
  private probing: Promise<void> | undefined;
  private readonly now: () => number;

  constructor(
    private readonly options: CircuitBreakerOptions,
    private readonly probe: CircuitProbe,
    private readonly onTransition: (transition: CircuitTransition) => void = () => {},
  ) {
    this.now = options.now ?? Date.now;
  }

  get state(): CircuitState {
    return this.current;
  }

  get enabled(): boolean {
    return this.options.failureThreshold > 0;
  }

  /** Settles when the probe in flight (if any) has decided the circuit's next state. */
  probed(): Promise<void> {
    return this.probing ?? Promise.resolve();
  }

  /** Asks to make a call now. An admitted call must be recorded once; a refused one must not. */
  admit(): Admission {
    if (!this.enabled || this.current === 'closed') return { admitted: true };
    if (this.current === 'open') {
      const left = this.openUntil - this.now();
      if (left > 0) return { admitted: false, retryAfterMs: left };
      this.transition('half_open');
      this.probing = this.runProbe();
    }
    return { admitted: false, retryAfterMs: HALF_OPEN_RETRY_AFTER_MS };
  }

  /** The outcome of an admitted call. Calls admitted before the circuit opened that end while it is not closed count for nothing. */
  record(failed: boolean): void {
    if (!this.enabled || this.current !== 'closed') return;
    if (!failed) {
      this.failures = 0;
      return;
    }
    this.failures += 1;
    if (this.failures >= this.options.failureThreshold) this.open();
  }

  private async runProbe(): Promise<void> {
    const answered = await this.probe().catch(() => false);
    this.probing = undefined;
    if (this.current !== 'half_open') return;
    if (answered) {
      this.failures = 0;
      this.transition('closed');
    } else {
      this.failures += 1;
      this.open();
    }
  }

  private open(): void {
    this.openUntil = this.now() + this.options.openMs;
    this.transition('open');
  }

  private transition(to: CircuitState): void {
    const change: CircuitTransition = {
      from: this.current,
      to,
      consecutiveFailures: this.failures,
      ...(to === 'open' ? { openMs: this.options.openMs } : {}),
    };
    this.current = to;
    this.onTransition(change);
    this.options.onTransition?.(change);
  }
}
