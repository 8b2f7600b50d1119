import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

/** A route's window: one minute, or one hour for the few routes counted per hour (exports). */
export const MINUTE = 60;
export const HOUR = 3_600;

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetInSeconds: number;
  /** The window's length in seconds (MINUTE or HOUR). */
  windowSeconds: number;
}

/**
 * Fixed windows (one minute; one hour for the routes that say so) per caller per route. With Redis every gateway replica shares the same
 * counters; if Redis stops answering, each replica falls back to its own in-memory window rather
 * than failing requests (an insurance limiter), and returns to Redis when it is back.
 */
export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterAbstract>();

  constructor(private readonly options: { redis?: Redis; multiplier?: number; keyPrefix?: string }) {}

  /** The configured limit of a route after the multiplier. */
  effectiveLimit(perMinute: number): number {
    return Math.max(1, Math.floor(perMinute * (this.options.multiplier ?? 1)));
  }

  private limiter(points: number, duration: number): RateLimiterAbstract {
    // The minute's counters keep their names of before; an hour's are apart.
    const name = duration === MINUTE ? String(points) : `${points}/${duration}`;
    let limiter = this.limiters.get(name);
    if (!limiter) {
      const keyPrefix = `${this.options.keyPrefix ?? 'mileage:rl'}:${name}`;
      const memory = new RateLimiterMemory({ points, duration, keyPrefix });
      limiter = this.options.redis
        ? new RateLimiterRedis({
            storeClient: this.options.redis,
            points,
            duration,
            keyPrefix,
            insuranceLimiter: memory,
            rejectIfRedisNotReady: true,
          })
        : memory;
      this.limiters.set(name, limiter);
    }
    return limiter;
  }

  /** Counts one request of `callerKey` on `routeId`, whose limit is `requests` per `windowSeconds` (a minute). */
  async consume(
    routeId: string,
    callerKey: string,
    requests: number,
    windowSeconds: number = MINUTE,
  ): Promise<RateLimitDecision> {
    const limit = this.effectiveLimit(requests);
    const key = `${routeId}:${callerKey}`;
    try {
      const res = await this.limiter(limit, windowSeconds).consume(key);
      return {
        windowSeconds,
        allowed: true,
        limit,
        remaining: res.remainingPoints,
        resetInSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
      };
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        return {
          windowSeconds,
          allowed: false,
          limit,
          remaining: 0,
          resetInSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)),
        };
      }
      throw rejection;
    }
  }
}

/** The contract's headers: X-RateLimit-* (reset as epoch seconds) and the IETF RateLimit-Policy / RateLimit fields. */
export function rateLimitHeaders(decision: RateLimitDecision, nowMs = Date.now()): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(decision.limit),
    'X-RateLimit-Remaining': String(decision.remaining),
    'X-RateLimit-Reset': String(Math.ceil(nowMs / 1000) + decision.resetInSeconds),
    'RateLimit-Policy': `"${windowName(decision.windowSeconds)}";q=${decision.limit};w=${decision.windowSeconds}`,
    RateLimit: `"${windowName(decision.windowSeconds)}";r=${decision.remaining};t=${decision.resetInSeconds}`,
  };
}

/** The window's policy name in the RateLimit fields, and its unit in messages. */
export function windowName(windowSeconds: number): string {
  return windowSeconds === HOUR ? 'per-hour' : 'per-minute';
}
