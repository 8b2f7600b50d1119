/**
 * A circuit breaker for the calls of one client to one downstream (a gRPC target and service).
 *
 * - closed: calls go through; `failureThreshold` failures in a row (a success resets the count) open it.
 * - open: calls are refused at once for `openMs`.
 * - half-open: after `openMs` the next call goes through as the one probe while every other call is still refused;
 *   the probe's success closes the circuit, its failure opens it again for another `openMs`.
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
  /** How long an open circuit refuses calls before it lets one probe through. */
  openMs: number;
  /** The clock (tests advance their own). */
  now?: () => number;
}

export interface CircuitTransition {
  from: CircuitState;
  to: CircuitState;
  /** Failures in a row that led to this transition (0 when closing). */
  consecutiveFailures: number;
  /** When opening: how long calls are refused. */
  openMs?: number;
}

/** The admission of one call: go ahead (`probe` when it is the half-open probe), or refused for `retryAfterMs`. */
export type Admission = { admitted: true; probe: boolean } | { admitted: false; retryAfterMs: number };

/** How long calls refused while a probe is in flight are told to wait: the probe settles within its deadline. */
const HALF_OPEN_RETRY_AFTER_MS = 1_000;

export class CircuitBreaker {
  private current: CircuitState = 'closed';
  private failures = 0;
  private openUntil = 0;
  private probing = false;
  private readonly now: () => number;

  constructor(
    private readonly options: CircuitBreakerOptions,
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

  /**
   * Asks to make a call now. A refused call must not be recorded; an admitted one must be recorded (or abandoned, when
   * it was never sent) exactly once.
   */
  admit(): Admission {
    if (!this.enabled || this.current === 'closed') return { admitted: true, probe: false };
    const now = this.now();
    if (this.current === 'open') {
      if (now < this.openUntil) return { admitted: false, retryAfterMs: this.openUntil - now };
      this.transition('half_open');
    }
    if (this.probing) return { admitted: false, retryAfterMs: HALF_OPEN_RETRY_AFTER_MS };
    this.probing = true;
    return { admitted: true, probe: true };
  }

  /**
   * The outcome of an admitted call. Only the probe decides in half-open; calls admitted before the circuit opened
   * that end while it is open (or half-open) change nothing.
   */
  record(admission: { probe: boolean }, failed: boolean): void {
    if (!this.enabled) return;
    if (admission.probe) {
      this.probing = false;
      if (this.current !== 'half_open') return;
      if (failed) {
        this.failures += 1;
        this.open();
      } else {
        this.failures = 0;
        this.transition('closed');
      }
      return;
    }
    if (this.current !== 'closed') return;
    if (!failed) {
      this.failures = 0;
      return;
    }
    this.failures += 1;
    if (this.failures >= this.options.failureThreshold) this.open();
  }

  /** An admitted call that was never sent: it tells nothing, and a probe's turn passes to the next call. */
  abandon(admission: { probe: boolean }): void {
    if (admission.probe) this.probing = false;
  }

  private open(): void {
    this.openUntil = this.now() + this.options.openMs;
    this.transition('open');
  }

  private transition(to: CircuitState): void {
    const from = this.current;
    this.current = to;
    this.onTransition({
      from,
      to,
      consecutiveFailures: this.failures,
      ...(to === 'open' ? { openMs: this.options.openMs } : {}),
    });
  }
}
