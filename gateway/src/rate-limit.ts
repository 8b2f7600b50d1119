import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

const WINDOW_SECONDS = 60;

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetInSeconds: number;
}

/**
 * Fixed one-minute windows per caller per route. With Redis every gateway replica shares the same
 * counters; if Redis stops answering, each replica falls back to its own in-memory window rather
 * than failing requests (an insurance limiter), and returns to Redis when it is back.
 */
export class RateLimits {
  private readonly limiters = new Map<number, RateLimiterAbstract>();

  constructor(private readonly options: { redis?: Redis; multiplier?: number; keyPrefix?: string }) {}

  /** The configured limit of a route after the multiplier. */
  effectiveLimit(perMinute: number): number {
    return Math.max(1, Math.floor(perMinute * (this.options.multiplier ?? 1)));
  }

  private limiter(points: number): RateLimiterAbstract {
    let limiter = this.limiters.get(points);
    if (!limiter) {
      const keyPrefix = `${this.options.keyPrefix ?? 'mileage:rl'}:${points}`;
      const memory = new RateLimiterMemory({ points, duration: WINDOW_SECONDS, keyPrefix });
      limiter = this.options.redis
        ? new RateLimiterRedis({
            storeClient: this.options.redis,
            points,
            duration: WINDOW_SECONDS,
            keyPrefix,
            insuranceLimiter: memory,
            rejectIfRedisNotReady: true,
          })
        : memory;
      this.limiters.set(points, limiter);
    }
    return limiter;
  }

  async consume(routeId: string, callerKey: string, perMinute: number): Promise<RateLimitDecision> {
    const limit = this.effectiveLimit(perMinute);
    const key = `${routeId}:${callerKey}`;
    try {
      const res = await this.limiter(limit).consume(key);
      return {
        allowed: true,
        limit,
        remaining: res.remainingPoints,
        resetInSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
      };
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        return {
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
    'RateLimit-Policy': `"per-minute";q=${decision.limit};w=${WINDOW_SECONDS}`,
    RateLimit: `"per-minute";r=${decision.remaining};t=${decision.resetInSeconds}`,
  };
}
