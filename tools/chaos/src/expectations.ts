// What docs/operations.md promises under each fault, as the expectation rows `judge` applies. Pure: the times a fault
// marks while it runs (when PostgreSQL went down, when a replica was thawed) are read when its samples are judged.
import { is2xx, type Expectation, type Sample } from './report';

/** A 503 that says when to retry. */
const retryable503 = (s: Sample) => s.status === 503 && s.retryAfter;
/** Answered at once rather than after a deadline: a fail-fast answer. */
const fast = (s: Sample) => s.endedAt - s.startedAt < 500;

/** Nothing fails. */
export const allSucceed = (text: string): Expectation => ({ text, required: true, accepts: is2xx });

/** The window's last second answered 2xx throughout, or why not. */
export function recovered(w: Sample[]): string | undefined {
  const end = Math.max(...w.map((s) => s.startedAt));
  const last = w.filter((s) => s.startedAt > end - 1000);
  const bad = last.filter((s) => !is2xx(s)).length;
  return bad ? `not recovered: ${bad} of the last second's ${last.length} requests failed` : undefined;
}

/** A rolling restart: no request fails and every replica drains cleanly (the unclean ones named as they happen). */
export const rollingRestart = (uncleanDrains: readonly string[]): Expectation => ({
  text: '0 failed, every drain clean (exit 0)',
  required: true,
  accepts: is2xx,
  check: () => (uncleanDrains.length ? `unclean drain: ${uncleanDrains.join(', ')}` : undefined),
});

/**
 * CURSOR_SECRET and the attestation key rotated: no request fails, and every cursor issued before the rotation is still
 * continued by both gateways afterwards (`stale`: the ones that were not, filled in when the rotation is over).
 */
export const keyRotation = (stale: readonly string[]): Expectation => ({
  text: '0 failed; every cursor issued before still valid on both gateways',
  required: true,
  accepts: is2xx,
  check: () => (stale.length ? stale.join('; ') : undefined),
});

/**
 * PostgreSQL stopped at downAt and started at upAt: 503 + Retry-After only for requests answered after it went down
 * (one in flight then counts) and started before the services' checks can have seen it back (recoveryMs); recovered
 * by the end, and no process restarted.
 */
export const postgresRestart = (
  marks: { downAt: number; upAt: number },
  recoveryMs: number,
  restarted: () => boolean,
): Expectation => ({
  text: '503 + Retry-After only while it is down, recovery without restarts',
  required: true,
  accepts: (s) => is2xx(s) || (retryable503(s) && s.endedAt >= marks.downAt && s.startedAt <= marks.upAt + recoveryMs),
  check: (w) => recovered(w) ?? (restarted() ? 'a process was restarted' : undefined),
});

/**
 * A request the gateway failed because of a freeze that began at frozenAt: sent at most one deadline after it (or in
 * flight then) and answered 504 (its deadline passed) or 503 + Retry-After (its connection was found frozen and closed,
 * or nothing answered), however long it took.
 */
const caughtByFreeze = (s: Sample, frozenAt: number, deadlineMs: number) =>
  (s.status === 504 || retryable503(s)) && s.endedAt >= frozenAt && s.startedAt <= frozenAt + deadlineMs;

/**
 * One replica of two frozen from frozenAt to thawedAt: failures only for requests sent within one deadline of the
 * freeze (the keepalive pings take the frozen replica out of the round robin within that), then 0, and none when it
 * comes back.
 */
export const replicaFrozen = (
  marks: { frozenAt: number; thawedAt: number },
  gateway: { deadlineMs: number },
): Expectation => ({
  text: 'failures only within one deadline of the freeze, then 0; none after SIGCONT',
  required: true,
  accepts: (s) => is2xx(s) || caughtByFreeze(s, marks.frozenAt, gateway.deadlineMs),
  check: recovered,
});

/**
 * Every replica of a service frozen: failures (504, or 503 once a frozen connection is closed) for requests sent within
 * one deadline of the freeze, while each gateway's breaker opens; then fast 503 + Retry-After until the breaker closes
 * again (openMs after the thaw, its probe a health check rather than a user's request); recovered by the end.
 */
export const serviceFrozen = (
  marks: { frozenAt: number; thawedAt: number },
  gateway: { deadlineMs: number; openMs: number },
): Expectation => ({
  text: 'failures only within one deadline of the freeze, then fast 503 + Retry-After; recovery after SIGCONT',
  required: true,
  accepts: (s) =>
    is2xx(s) ||
    caughtByFreeze(s, marks.frozenAt, gateway.deadlineMs + 1_000) ||
    (retryable503(s) &&
      fast(s) &&
      s.startedAt >= marks.frozenAt &&
      s.startedAt <= marks.thawedAt + gateway.openMs + 1_000),
  check: recovered,
});

/**
 * The identity provider down after a key rotation the gateways have not seen: a token of the new key gets 503 +
 * Retry-After (never 401), and is accepted once the provider is back (recoveredMs: how long after; undefined: never).
 */
export const unknownKeyWhileJwksDown = (recoveredMs: () => number | undefined): Expectation => ({
  text: '503 + Retry-After (never 401); 200 once the provider is back (within the 30 s refresh cooldown)',
  required: true,
  accepts: retryable503,
  check: () => (recoveredMs() === undefined ? 'not accepted within 30 s of the provider coming back' : undefined),
});

/**
 * A SCIM secret token's rotation and revocation across both gateways (CONTRACT §7: a revoked token is refused on the
 * very next request, at every replica): the reasons it did not hold, none when it held.
 */
export function secretTokenProblems(run: {
  firstServed: boolean;
  overlapServed: boolean;
  firstAfterRevocation: Record<string, number>;
  refusedAfterMs: Record<string, number | undefined>;
  survivorServed: boolean;
}): string[] {
  const problems: string[] = [];
  if (!run.firstServed) problems.push('a new token was not served by both gateways');
  if (!run.overlapServed) problems.push('the old and the new token were not both served during the rotation');
  for (const [gateway, status] of Object.entries(run.firstAfterRevocation)) {
    if (status === 401) continue;
    const ms = run.refusedAfterMs[gateway];
    problems.push(
      `gateway ${gateway.toUpperCase()} answered the first request after the 204 with ${status}` +
        (ms === undefined ? ' and still served the revoked token' : `; refused it only after ${ms} ms`),
    );
  }
  if (!run.survivorServed) problems.push('the new token stopped working');
  return problems;
}
