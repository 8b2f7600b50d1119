import { RETRY_AFTER_SECONDS } from '@mileage/runtime/grpc';
import type { Request, Response } from 'express';
import { TokenError, type Caller, type TokenVerifier } from './auth';
import { HttpProblem } from './problems';
import { HOUR, MINUTE, rateLimitHeaders, type RateLimits } from './rate-limit';

export const REALM = 'mileage';

export interface GuardDeps {
  verifier: TokenVerifier;
  rateLimits: RateLimits;
}

/** What one route (or family of routes) admits. */
export interface GuardRule {
  /** The rate-limit counter's name (the route id); the token's subject is whose counter it is. */
  limitId: string;
  /** Requests per window (a minute unless `windowSeconds` says otherwise). */
  perMinute: number;
  windowSeconds?: number;
  /** Every scope the token must carry. */
  scope: string | readonly string[];
}

/**
 * The gate in front of every /v1 route (/scim/v2 composes the same steps: routes/scim.ts), in the contract's order: token (401) → rate limit (429) →
 * scope (403). Every response past the rate limit carries its headers, so they are set on `res` here.
 */
export async function guard(req: Request, res: Response, deps: GuardDeps, rule: GuardRule): Promise<Caller> {
  const caller = await authenticate(req, deps.verifier);
  await enforceRateLimit(res, deps.rateLimits, rule.limitId, caller.subject, rule.perMinute, rule.windowSeconds);
  requireScope(caller, rule.scope);
  return caller;
}

/** Counts the request against `subject`'s limit; 429 past it. Sets the rate-limit headers on `res` either way. */
export async function enforceRateLimit(
  res: Response,
  rateLimits: RateLimits,
  limitId: string,
  subject: string,
  perMinute: number,
  windowSeconds: number = MINUTE,
): Promise<void> {
  const decision = await rateLimits.consume(limitId, subject, perMinute, windowSeconds).catch(() => {
    throw new HttpProblem(503, 'Rate limiting is unavailable; try again shortly', {
      'Retry-After': String(RETRY_AFTER_SECONDS),
    });
  });
  for (const [name, value] of Object.entries(rateLimitHeaders(decision))) res.setHeader(name, value);
  if (!decision.allowed) {
    const per = decision.windowSeconds === HOUR ? 'hour' : 'minute';
    throw new HttpProblem(429, `Rate limit of ${decision.limit} requests per ${per} exceeded`, {
      'Retry-After': String(decision.resetInSeconds),
    });
  }
}

export function requireScope(caller: Caller, scope: string | readonly string[]): void {
  const needed: readonly string[] = typeof scope === 'string' ? [scope] : scope;
  if (needed.every((s) => caller.scopes.has(s))) return;
  const listed = needed.join(' ');
  throw new HttpProblem(403, `The token lacks the scope${needed.length > 1 ? 's' : ''} "${listed}"`, {
    'WWW-Authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${listed}"`,
  });
}

/** The one 401 for a token that was sent and is not valid: which check failed is not told (it would guide a forger). */
export function invalidToken(): HttpProblem {
  return new HttpProblem(401, 'The access token is not valid', {
    'WWW-Authenticate': `Bearer realm="${REALM}", error="invalid_token"`,
  });
}

/**
 * The bearer token's caller (401 when there is none or it is not valid; 503 when it cannot be judged). `verify` judges
 * the well-formed token (the verifier's JWT check unless given: the SCIM route also takes secret tokens).
 */
export async function authenticate(
  req: Request,
  verifier: TokenVerifier,
  verify: (token: string) => Promise<Caller> = (token) => verifier.verify(token, () => req.ip),
): Promise<Caller> {
  const header = req.headers.authorization;
  const match = header ? /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header) : null;
  if (!header || !/^Bearer\b/i.test(header)) {
    throw new HttpProblem(401, 'Not authenticated', { 'WWW-Authenticate': `Bearer realm="${REALM}"` });
  }
  if (!match) {
    throw new HttpProblem(401, 'The access token is malformed', {
      'WWW-Authenticate': `Bearer realm="${REALM}", error="invalid_token", error_description="malformed token"`,
    });
  }
  try {
    return await verify(match[1]!);
  } catch (err) {
    if (err instanceof TokenError && err.wait) {
      // Refused while its address group is over the invalid-token limit: the contract's 429 with its headers, which
      // tells a misconfigured client to back off (a valid token from the same address is never refused).
      const { perMinute, retryAfterSeconds } = err.wait;
      const limit = {
        allowed: false,
        limit: perMinute,
        remaining: 0,
        resetInSeconds: retryAfterSeconds,
        windowSeconds: MINUTE,
      };
      throw new HttpProblem(429, 'Too many invalid tokens from this address; try again later', {
        ...rateLimitHeaders(limit),
        'Retry-After': String(retryAfterSeconds),
      });
    }
    if (err instanceof TokenError && err.kind === 'unavailable') {
      throw new HttpProblem(503, 'The token cannot be checked right now; try again shortly', {
        'Retry-After': String(RETRY_AFTER_SECONDS),
      });
    }
    // The refusals metric counts the reasons.
    throw invalidToken();
  }
}
