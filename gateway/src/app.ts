import { usersV1, type scimV1 } from '@mileage/proto';
import {
  endSpan,
  extractEdgeContext,
  fixedFieldLogger,
  isAcceptableRequestId,
  SpanKind,
  startSpan,
  traceLogFields,
  tracingEnabled,
  type Logger,
  type Metrics,
} from '@mileage/runtime/telemetry';
import { type DependencyReport } from '@mileage/runtime/service';
import { type PromiseClient } from '@mileage/runtime/grpc';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { randomUUID } from 'node:crypto';
import { DOCS_CLIENT_ID, docsRouter } from './docs';
import { openApiDocument } from './openapi';
import {
  logDownstreamFailure,
  HttpProblem,
  ValidationProblem,
  problemFromGrpc,
  sendProblem,
  sendValidationProblem,
} from './problems';
import { routeTable } from './route-table';
import { V1_ROUTES } from './routes';
import { scimRoute } from './routes/scim';
import { AccountLoader } from './account-loader';
import { CursorCodec } from './cursor';
import type { OrganizationCredentials } from './organization-credentials';
import { v1Route, type V1Deps } from './v1';

/** This process's own ability to serve (never its dependencies': see /healthz/dependencies). */
export interface Readiness {
  ready: boolean;
  checks: Record<string, boolean>;
}

export interface AppDeps extends Omit<V1Deps, 'accounts' | 'drivers' | 'cursors'> {
  /** The SCIM service, to which /scim/v2 requests are forwarded. */
  scim: PromiseClient<scimV1.ScimServiceClient>;
  /** Which organization a SCIM credential acts for (claims, client bindings, secret tokens). */
  credentials: OrganizationCredentials;
  /** Deadline of a forwarded SCIM request (writes involve several calls). */
  scimDeadlineMs?: number;
  /** ACTOR_ATTESTATION_SECRET: the gateway attests each SCIM request's provisioning client with it. */
  actorAttestationSecret: string;
  /** The realm URL, for the OAuth flows of the OpenAPI document. */
  issuer: string;
  /** The realm's public client of the /docs page (default mileage-docs); empty turns sign-in from the page off. */
  docsClientId?: string;
  /** Signs page cursors; every replica needs the same one (CURSOR_SECRET). */
  cursorSecret?: string;
  /** While the cursor secret rotates: the other key, still accepted (CURSOR_SECRET_PREVIOUS). */
  cursorSecretPrevious?: string;
  logger: Logger;
  metrics: Metrics;
  bodyLimitBytes: number;
  readiness(): Readiness | Promise<Readiness>;
  /** Per-dependency health, for /healthz/dependencies (operators and dashboards; never a probe). */
  dependencies?(): DependencyReport;
}

/** The operational paths, for 405 answers with an Allow header (the /v1 table knows its own). */
const OPERATIONAL_PATHS =
  /^\/(healthz|readyz|healthz\/dependencies|openapi\.json|docs|errors\/resync-required|errors\/export-running)$/;

/** The gateway's HTTP application; process wiring (listeners, clients, signals) lives in main.ts. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', false);

  app.use(requestContext(deps));
  app.use(bodyLimit(deps.bodyLimitBytes));

  // The routes that carry load come first, SCIM (one prefix) then /v1 (one table, one layer: route-table.ts): Express
  // tries every layer mounted before a request's own, and the docs page's router is one more router to enter. SCIM
  // paths are matched by the SCIM service itself (endpoint names case-insensitive, as clients vary).
  app.use('/scim/v2', scimRoute({ ...deps, deadlineMs: deps.scimDeadlineMs ?? 10_000 }));

  const v1: V1Deps = {
    ...deps,
    accounts: new AccountLoader(deps.users),
    drivers: new AccountLoader(deps.users, usersV1.UserView.USER_VIEW_DRIVER),
    cursors: new CursorCodec(deps.cursorSecret, deps.cursorSecretPrevious),
  };
  const v1Table = routeTable(
    '/v1/',
    V1_ROUTES.map((spec) => ({
      method: spec.method,
      path: spec.path,
      // A body is read raw (small) and parsed by the route after the token, limit and scope checks.
      handlers: spec.body
        ? [express.raw({ type: () => true, limit: spec.body.limitBytes }), v1Route(spec, v1)]
        : [v1Route(spec, v1)],
    })),
  );
  app.use(v1Table);

  app.get('/healthz', (_req, res) => {
    res.locals.routeId = 'healthz';
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    res.locals.routeId = 'readyz';
    const readiness = await deps.readiness();
    res
      .status(readiness.ready ? 200 : 503)
      .json({ status: readiness.ready ? 'ready' : 'not ready', checks: readiness.checks });
  });

  app.get('/healthz/dependencies', (_req, res) => {
    res.locals.routeId = 'dependencies';
    res.json(deps.dependencies?.() ?? { status: 'ok', dependencies: {} });
  });

  const openApi = JSON.stringify(openApiDocument({ issuer: deps.issuer }));
  app.get('/openapi.json', (_req, res) => {
    res.locals.routeId = 'openapi';
    res.type('application/json').send(openApi);
  });
  // The problem types of /v1 beyond about:blank (RFC 9457 `type`, a reference relative to this gateway): what they mean.
  app.get('/errors/resync-required', (_req, res) => {
    res.locals.routeId = 'errors';
    res.type('text/plain').send(RESYNC_REQUIRED_TEXT);
  });
  app.get('/errors/export-running', (_req, res) => {
    res.locals.routeId = 'errors';
    res.type('text/plain').send(EXPORT_RUNNING_TEXT);
  });
  app.use(docsRouter({ issuer: deps.issuer, clientId: deps.docsClientId ?? DOCS_CLIENT_ID }));

  app.use((req, res) => {
    res.locals.routeId = 'unmatched';
    const allow = v1Table.allowedAt(req.path) ?? (OPERATIONAL_PATHS.test(req.path) ? 'GET, HEAD' : undefined);
    if (allow) sendProblem(res, 405, `Method ${req.method} is not allowed here`, { Allow: allow });
    else sendProblem(res, 404, 'Not found');
  });
  app.use(errorHandler(deps.logger));
  return app;
}

const RESYNC_REQUIRED_TEXT = `410 Gone, type /errors/resync-required (the drive lists)

With include_deleted=true: deleted drives and withdrawn reports are kept as tombstones for a retention window (90
days unless the operator set TOMBSTONE_RETENTION_DAYS). The request's date_after / modified_after (also when it
travels inside a cursor) is older than that, so deletions since then may be gone and an incremental sync from it
could silently keep drives that no longer exist.

With any cursor: the platform's database was restored to a point in time before the cursor was read, so what the
cursor continued from may be gone, and continuing could silently skip what was written again since.

Start a full sync: list without date_after (include_deleted=true is fine), follow next_cursor to the end, replace
the local copy with what the walk returned, and continue incrementally with date_after = the newest "modified" seen.
`;

const EXPORT_RUNNING_TEXT = `409 Conflict, type /errors/export-running (POST /v1/organization/exports)

An export of the organization is already queued or running; one runs at a time. Follow it with
GET /v1/organization/exports (or the Location of the request that started it) until it is completed or failed,
then download its archive, or request a new export.
`;

/** Request id (echoed when acceptable, else generated), logging context, access log line and RED metrics. */
function requestContext(deps: Pick<AppDeps, 'logger' | 'metrics'>): RequestHandler {
  // Every field of the access line is chosen here: none is a header, a body or an error.
  const accessLog = fixedFieldLogger(deps.logger);
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const sent = req.headers['x-request-id'];
    const requestId = isAcceptableRequestId(sent) ? sent : randomUUID();
    res.setHeader('X-Request-Id', requestId);
    res.locals.requestId = requestId;
    const traced = tracingEnabled()
      ? startSpan(req.method, SpanKind.SERVER, extractEdgeContext(req.headers), {
          'http.request.method': req.method,
          'url.path': req.path,
        })
      : undefined;
    if (traced) {
      res.locals.span = traced.span;
      res.locals.trace = traced.context;
    }
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = (res.locals.routeId as string | undefined) ?? 'unmatched';
      deps.metrics.httpRequestDuration.observe({ method: req.method, route, status_code: res.statusCode }, seconds);
      if (traced)
        endSpan(traced.span, res.statusCode >= 500 ? `HTTP ${res.statusCode}` : undefined, {
          'http.response.status_code': res.statusCode,
        });
      accessLog.info(
        {
          request_id: requestId,
          ...traceLogFields(traced?.context),
          method: req.method,
          path: req.path,
          route,
          status: res.statusCode,
          duration_ms: Math.round(seconds * 1e4) / 10,
        },
        'request',
      );
    });
    next();
  };
}

/** Refuses declared bodies over the limit before anything reads them. */
function bodyLimit(limit: number): RequestHandler {
  return (req, res, next) => {
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > limit && !req.path.startsWith('/scim/v2/')) {
      res.locals.routeId = 'unmatched';
      res.setHeader('Connection', 'close');
      sendProblem(res, 413, `Request body larger than ${limit} bytes`);
      return;
    }
    next();
  };
}

function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, _req, res, _next) => {
    const request_id = res.locals.requestId as string | undefined;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof HttpProblem) return sendProblem(res, err.status, err.detail, err.headers, err.type);
    if (err instanceof ValidationProblem) return sendValidationProblem(res, err.issues);
    const status =
      (err as { status?: number; statusCode?: number }).status ?? (err as { statusCode?: number }).statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) return sendProblem(res, status, 'Bad request');
    if (typeof (err as { code?: unknown }).code === 'number') {
      const problem = problemFromGrpc(err);
      if (problem instanceof ValidationProblem) return sendValidationProblem(res, problem.issues);
      logDownstreamFailure(logger, err, problem.status, request_id, 'downstream call failed');
      return sendProblem(res, problem.status, problem.detail, problem.headers, problem.type);
    }
    logger.error({ err, request_id }, 'request failed');
    sendProblem(res, 500, 'Internal server error');
  };
}
