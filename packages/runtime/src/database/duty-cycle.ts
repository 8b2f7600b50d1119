import { setTimeout as sleep } from 'node:timers/promises';

/** The pause after `workMs` of work that keeps the work at `duty` (0 < duty ≤ 1) of the wall time. */
export function pauseAfter(workMs: number, duty: number): number {
  if (!(duty > 0 && duty <= 1)) throw new Error(`a duty cycle is a fraction in (0, 1], not ${duty}`);
  return Math.max(0, workMs) * ((1 - duty) / duty);
}

/**
 * Paces background work (an export's pages, an erasure's batches) so that it takes at most `duty` of the wall time:
 * `pace()` between pieces pauses in proportion to the work since the last pause. The rest is left to the requests of
 * every other organization, which share the cores and the database with it; a pause is a delay, not a wait for
 * anything, so the work ends at the same place, only later.
 */
export class DutyCycle {
  private since: number;

  constructor(
    private readonly duty: number,
    private readonly clock: { now(): number; sleep(ms: number): Promise<unknown> } = {
      now: () => performance.now(),
      sleep: (ms) => sleep(ms),
    },
  ) {
    pauseAfter(0, duty);
    this.since = clock.now();
  }

  async pace(): Promise<void> {
    const pause = pauseAfter(this.clock.now() - this.since, this.duty);
    if (pause > 0) await this.clock.sleep(pause);
    this.since = this.clock.now();
  }
}
