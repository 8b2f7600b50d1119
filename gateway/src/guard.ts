import { RETRY_AFTER_SECONDS } from '@mileage/runtime';
import type { Request, Response } from 'express';
import { TokenError, type Caller, type TokenVerifier } from './auth';
import { HttpProblem } from './problems';
import { rateLimitHeaders, type RateLimits } from './rate-limit';

export const REALM = 'mileage';

export interface GuardDeps {
  verifier: TokenVerifier;
  rateLimits: RateLimits;
}

/** What one route (or family of routes) admits. */
export interface GuardRule {
  /** The rate-limit counter's name: the route id on /v1, one counter for all of /scim/v2. */
  limitId: string;
  perMinute: number;
  /** Whose counter it is; the token's subject unless given (SCIM counts per provisioning client). */
  limitedBy?(caller: Caller): string;
  scope: string;
}

/**
 * The gate in front of every /v1 and /scim/v2 route, in the contract's order: token (401) → rate limit (429) →
 * scope (403). Every response past the rate limit carries its headers, so they are set on `res` here.
 */
export async function guard(req: Request, res: Response, deps: GuardDeps, rule: GuardRule): Promise<Caller> {
  const caller = await authenticate(req, deps.verifier);

  const subject = rule.limitedBy ? rule.limitedBy(caller) : caller.subject;
  const decision = await deps.rateLimits.consume(rule.limitId, subject, rule.perMinute).catch(() => {
    throw new HttpProblem(503, 'Rate limiting is unavailable; try again shortly', {
      'Retry-After': String(RETRY_AFTER_SECONDS),
    });
  });
  for (const [name, value] of Object.entries(rateLimitHeaders(decision))) res.setHeader(name, value);
  if (!decision.allowed) {
    throw new HttpProblem(429, `Rate limit of ${decision.limit} requests per minute exceeded`, {
      'Retry-After': String(decision.resetInSeconds),
    });
  }

  if (!caller.scopes.has(rule.scope)) {
    throw new HttpProblem(403, `The token lacks the scope "${rule.scope}"`, {
      'WWW-Authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${rule.scope}"`,
    });
  }
  return caller;
}

/** The bearer token's caller (401 when there is none or it is not valid; 503 when it cannot be judged). */
async function authenticate(req: Request, verifier: TokenVerifier): Promise<Caller> {
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
    return await verifier.verify(match[1]!, req.ip);
  } catch (err) {
    if (err instanceof TokenError && err.wait) {
      // Not judged (no 401: the token may be valid); the contract's 429 with its headers.
      const { perMinute, retryAfterSeconds } = err.wait;
      const limit = { allowed: false, limit: perMinute, remaining: 0, resetInSeconds: retryAfterSeconds };
      throw new HttpProblem(429, 'Too many invalid tokens from this address; try again later', {
        ...rateLimitHeaders(limit),
        'Retry-After': String(retryAfterSeconds),
      });
    }
    if (err instanceof TokenError && err.kind === 'unavailable') {
      throw new HttpProblem(503, 'The identity provider is unavailable; try again shortly', {
        'Retry-After': String(RETRY_AFTER_SECONDS),
      });
    }
    // Which check failed is not told: it would guide a forger (the refusals metric counts the reasons).
    throw new HttpProblem(401, 'The access token is not valid', {
      'WWW-Authenticate': `Bearer realm="${REALM}", error="invalid_token"`,
    });
  }
}
