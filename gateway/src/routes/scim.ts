import { scimV1 } from '@mileage/proto';
import type { CallSettings, Logger, PromiseClient, Span, TraceContext } from '@mileage/runtime';
import express, { type Request, type RequestHandler, type Response } from 'express';
import type { TokenVerifier } from '../auth';
import { HttpProblem, problemFromGrpc } from '../problems';
import { rateLimitHeaders, type RateLimits } from '../rate-limit';
import { authenticate, REALM } from '../v1';

export const SCIM_SCOPE = 'scim';
/** Per provisioning client: identity providers send bursts when a sync cycle starts. */
export const SCIM_REQUESTS_PER_MINUTE = 1200;
const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
/** Request headers the SCIM service reads; nothing else (cookies, tokens) crosses into it. */
const FORWARDED_HEADERS = ['content-type', 'if-match', 'if-none-match'];

export interface ScimRouteDeps {
  verifier: TokenVerifier;
  rateLimits: RateLimits;
  scim: PromiseClient<scimV1.ScimServiceClient>;
  logger: Logger;
  bodyLimitBytes: number;
  deadlineMs: number;
}

function sendScimError(
  res: Response,
  status: number,
  detail: string,
  headers: Record<string, string> = {},
  scimType?: string,
): void {
  const body = JSON.stringify({
    schemas: [SCIM_ERROR],
    status: String(status),
    ...(scimType ? { scimType } : {}),
    detail,
  });
  res.status(status).set(headers).set('Content-Type', 'application/scim+json; charset=utf-8').send(body);
}

/** A metrics label per endpoint family, never per id. */
function routeLabel(path: string): string {
  const endpoint = path.split('/')[1]?.toLowerCase() ?? '';
  const known: Record<string, string> = {
    users: 'scim_users',
    groups: 'scim_groups',
    serviceproviderconfig: 'scim_discovery',
    resourcetypes: 'scim_discovery',
    schemas: 'scim_discovery',
  };
  return known[endpoint] ?? 'scim_other';
}

/**
 * /scim/v2: token (401) → rate limit per provisioning client (429) → scope "scim" (403) → body (≤ limit, 413),
 * then the request is forwarded as it came to the SCIM service, which decides the rest. Errors are SCIM Error
 * resources, so identity providers log something useful.
 */
export function scimRoute(deps: ScimRouteDeps): RequestHandler {
  const readBody = express.raw({ type: () => true, limit: deps.bodyLimitBytes });
  return async (req: Request, res: Response) => {
    res.locals.routeId = routeLabel(req.path);
    const span = res.locals.span as Span | undefined;
    if (span?.isRecording()) span.updateName(`${req.method} /scim/v2/${req.path.split('/')[1] ?? ''}`);
    try {
      const caller = await authenticate(req, deps.verifier);
      const clientKey = caller.clientId ?? caller.subject;
      const decision = await deps.rateLimits.consume('scim', clientKey, SCIM_REQUESTS_PER_MINUTE).catch(() => {
        throw new HttpProblem(503, 'Rate limiting is unavailable; try again shortly', { 'Retry-After': '5' });
      });
      for (const [name, value] of Object.entries(rateLimitHeaders(decision))) res.setHeader(name, value);
      if (!decision.allowed) {
        throw new HttpProblem(429, `Rate limit of ${decision.limit} requests per minute exceeded`, {
          'Retry-After': String(decision.resetInSeconds),
        });
      }
      if (!caller.scopes.has(SCIM_SCOPE)) {
        throw new HttpProblem(403, `The token lacks the scope "${SCIM_SCOPE}"`, {
          'WWW-Authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${SCIM_SCOPE}"`,
        });
      }
      await new Promise<void>((resolve, reject) =>
        readBody(req, res, (err?: unknown) => (err ? reject(err) : resolve())),
      );
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const headers: Record<string, string> = {};
      for (const name of FORWARDED_HEADERS) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const queryStart = req.originalUrl.indexOf('?');
      const call: CallSettings = {
        requestId: res.locals.requestId as string,
        trace: res.locals.trace as TraceContext | undefined,
        deadlineMs: deps.deadlineMs,
      };
      const answer = await deps.scim.handleRequest(
        {
          method: req.method,
          path: req.path,
          query: queryStart >= 0 ? req.originalUrl.slice(queryStart + 1) : '',
          headers,
          body,
          clientId: caller.clientId ?? caller.subject,
        },
        call,
      );
      res.status(answer.status).set(answer.headers);
      if (req.method === 'HEAD' || answer.body.length === 0) res.end();
      else res.send(Buffer.from(answer.body));
    } catch (err) {
      if (err instanceof HttpProblem) return sendScimError(res, err.status, err.detail, err.headers);
      const status = (err as { status?: number; type?: string }).status;
      if (status === 413)
        return sendScimError(res, 413, `The request body is larger than ${deps.bodyLimitBytes} bytes`, {
          Connection: 'close',
        });
      if (typeof status === 'number' && status >= 400 && status < 500)
        return sendScimError(res, 400, 'The request body could not be read', {}, 'invalidSyntax');
      if (typeof (err as { code?: unknown }).code === 'number') {
        const problem = problemFromGrpc(err);
        if (problem instanceof HttpProblem) {
          if (problem.status >= 500 && problem.status !== 503 && problem.status !== 504)
            deps.logger.error({ err, request_id: res.locals.requestId }, 'SCIM service call failed');
          return sendScimError(
            res,
            problem.status,
            problem.status >= 500 && problem.status < 503 ? 'Internal server error' : problem.detail,
            problem.headers,
          );
        }
      }
      deps.logger.error({ err, request_id: res.locals.requestId }, 'SCIM request failed');
      sendScimError(res, 500, 'Internal server error');
    }
  };
}
