import type { webhooksV1 } from '@mileage/proto';
import { WEBHOOK_EVENT_TYPES } from '@mileage/runtime/outbox';
import { apiTime, apiTimeOrNull } from '@mileage/runtime/formats';
import type { Request } from 'express';
import { problemFromGrpc, ValidationProblem, type ValidationIssue } from '../problems';
import { pageLimitParameter } from '../drive-params';
import { jsonBody, pageLimit, uuidPathParameter, UUID } from './request-input';
import type { ApiParameter, RouteSpec, V1Deps } from '../v1';
import { groupIdParameter, requireGroupAdmin, validateGroupIdParam } from './groups';

/** A webhook subscription as the External API shows it (the secret only in the creation's response). */
export interface WebhookSchema {
  id: string;
  url: string;
  events: string[];
  status: 'active' | 'disabled';
  disabled_reason: string | null;
  disabled_at: string | null;
  failure_run: number;
  created: string;
}

export interface DeliverySchema {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  created: string;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  last_latency_ms: number | null;
  delivered_at: string | null;
}

const DELIVERY_ID = /^[1-9][0-9]{0,17}$/;
const EVENT_TYPES = new Set<string>(WEBHOOK_EVENT_TYPES);
const ADMINS_ONLY = 'Only admins of this group may manage its webhooks';

/** The largest webhook creation body read (`{url, events}` is far smaller); larger ones are 413. */
export const WEBHOOK_BODY_LIMIT = 16_384;

const webhookIdParameter = uuidPathParameter('webhook_id', 'Webhook');
const deliveryIdParameter: ApiParameter = {
  name: 'delivery_id',
  in: 'path',
  required: true,
  description: 'Delivery id (a positive integer).',
  schema: { type: 'string', pattern: DELIVERY_ID.source },
};

function toWebhook(s: webhooksV1.Subscription): WebhookSchema {
  return {
    id: s.id,
    url: s.url,
    events: s.events,
    status: s.state === 'disabled' ? 'disabled' : 'active',
    disabled_reason: s.disabledReason || null,
    disabled_at: apiTimeOrNull(s.disableTime),
    failure_run: s.failureRun,
    created: apiTime(s.createTime),
  };
}

function toDelivery(d: webhooksV1.Delivery): DeliverySchema {
  return {
    id: d.id,
    event_id: d.eventId,
    event_type: d.eventType,
    status: d.status as DeliverySchema['status'],
    attempts: d.attempts,
    created: apiTime(d.createTime),
    next_attempt_at: apiTimeOrNull(d.nextAttemptTime),
    last_attempt_at: apiTimeOrNull(d.lastAttemptTime),
    last_status_code: d.lastStatusCode || null,
    last_error: d.lastError || null,
    last_latency_ms: d.lastAttemptTime ? d.lastLatencyMs : null,
    delivered_at: apiTimeOrNull(d.deliveredTime),
  };
}

/** The path's webhook id (a UUID) and, when the route has one, delivery id; 422 for malformed ones. */
function pathIds(req: Request, withDelivery: boolean): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (!UUID.test(String(req.params.webhook_id)))
    issues.push({ loc: ['path', 'webhook_id'], msg: 'Input should be a webhook id (a UUID)', type: 'uuid_parsing' });
  if (withDelivery && !DELIVERY_ID.test(String(req.params.delivery_id)))
    issues.push({ loc: ['path', 'delivery_id'], msg: 'Input should be a positive integer', type: 'int_parsing' });
  return issues;
}

/** `{url, events[]}`: url a string of 1..2048 characters, events a non-empty list of known types, none twice. */
export function validateCreateBody(body: unknown): { url: string; events: string[] } | ValidationIssue[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return [{ loc: ['body'], msg: 'Input should be a valid object', type: 'model_attributes_type' }];
  const { url, events } = body as { url?: unknown; events?: unknown };
  const issues: ValidationIssue[] = [];
  if (url === undefined) issues.push({ loc: ['body', 'url'], msg: 'Field required', type: 'missing' });
  else if (typeof url !== 'string')
    issues.push({ loc: ['body', 'url'], msg: 'Input should be a valid string', type: 'string_type' });
  else if (url.length < 1 || url.length > 2048)
    issues.push({ loc: ['body', 'url'], msg: 'URL should have 1 to 2048 characters', type: 'string_too_long' });
  if (events === undefined) issues.push({ loc: ['body', 'events'], msg: 'Field required', type: 'missing' });
  else if (!Array.isArray(events))
    issues.push({ loc: ['body', 'events'], msg: 'Input should be a valid list', type: 'list_type' });
  else {
    if (!events.length)
      issues.push({ loc: ['body', 'events'], msg: 'List should have at least 1 item', type: 'too_short' });
    const seen = new Set<unknown>();
    events.forEach((e, i) => {
      if (typeof e !== 'string' || !EVENT_TYPES.has(e))
        issues.push({
          loc: ['body', 'events', i],
          msg: `Input should be ${WEBHOOK_EVENT_TYPES.map((t) => `'${t}'`).join(', ')}`,
          type: 'enum',
        });
      else if (seen.has(e))
        issues.push({ loc: ['body', 'events', i], msg: 'Event type listed twice', type: 'value_error' });
      seen.add(e);
    });
  }
  return issues.length ? issues : { url: url as string, events: events as string[] };
}

const requireAdmin = (
  groupId: number,
  deps: V1Deps,
  userId: string,
  call: Parameters<RouteSpec<unknown>['handle']>[3],
) => requireGroupAdmin(deps.groups.checkGroupAdmin({ groupId, userId }, call), ADMINS_ONLY);

/**
 * Invalid input the Webhooks service found (a refused target URL) is about the body; any other failure goes on as the
 * gRPC error it is, which the error handler answers and logs.
 */
function bodyProblem(err: unknown): never {
  const problem = problemFromGrpc(err);
  if (problem instanceof ValidationProblem)
    throw new ValidationProblem(problem.issues.map((i) => ({ ...i, loc: ['body', ...i.loc.slice(1)] })));
  throw err;
}

export const createWebhook: RouteSpec<{ groupId: number; url: string; events: string[] }> = {
  id: 'webhooks.create',
  method: 'post',
  path: '/v1/groups/{group_id}/webhooks',
  scope: 'webhooks_manage',
  perMinute: 30,
  parameters: [groupIdParameter],
  body: { schema: 'WebhookCreateRequest', limitBytes: WEBHOOK_BODY_LIMIT },
  status: 201,
  response: 'WebhookCreated',
  validate: (req) => {
    const group = validateGroupIdParam(req);
    const issues = 'issues' in group ? [...group.issues] : [];
    const body = jsonBody(req);
    if ('issue' in body) issues.push(body.issue);
    else {
      const checked = validateCreateBody(body.value);
      if (Array.isArray(checked)) issues.push(...checked);
      else if (!issues.length) return { input: { groupId: (group as { input: number }).input, ...checked } };
    }
    return { issues };
  },
  handle: async ({ groupId, url, events }, account, deps, call) => {
    await requireAdmin(groupId, deps, account.caller.userId, call);
    const created = await deps.webhooks.createSubscription({ groupId, url, events }, call).catch(bodyProblem);
    return { ...toWebhook(created.subscription!), secret: created.secret };
  },
};

export const listWebhooks: RouteSpec<number> = {
  id: 'webhooks.list',
  method: 'get',
  path: '/v1/groups/{group_id}/webhooks',
  scope: 'webhooks_manage',
  perMinute: 30,
  parameters: [groupIdParameter],
  response: 'WebhookListResponse',
  validate: (req) => validateGroupIdParam(req),
  handle: async (groupId, account, deps, call) => {
    await requireAdmin(groupId, deps, account.caller.userId, call);
    const { subscriptions } = await deps.webhooks.listSubscriptions({ groupId }, call);
    return { results: subscriptions.map(toWebhook) };
  },
};

const withWebhookId = (req: Request, withDelivery = false) => {
  const group = validateGroupIdParam(req);
  const issues = [...('issues' in group ? group.issues : []), ...pathIds(req, withDelivery)];
  return { group, issues };
};

export const deleteWebhook: RouteSpec<{ groupId: number; id: string }> = {
  id: 'webhooks.delete',
  method: 'delete',
  path: '/v1/groups/{group_id}/webhooks/{webhook_id}',
  scope: 'webhooks_manage',
  perMinute: 30,
  parameters: [groupIdParameter, webhookIdParameter],
  status: 204,
  validate: (req) => {
    const { group, issues } = withWebhookId(req);
    if (issues.length || 'issues' in group) return { issues };
    return { input: { groupId: group.input, id: String(req.params.webhook_id) } };
  },
  handle: async ({ groupId, id }, account, deps, call) => {
    await requireAdmin(groupId, deps, account.caller.userId, call);
    await deps.webhooks.deleteSubscription({ groupId, subscriptionId: id }, call);
    return undefined;
  },
};

export const listDeliveries: RouteSpec<{ groupId: number; id: string; limit: number }> = {
  id: 'webhooks.deliveries',
  method: 'get',
  path: '/v1/groups/{group_id}/webhooks/{webhook_id}/deliveries',
  scope: 'webhooks_manage',
  perMinute: 30,
  parameters: [groupIdParameter, webhookIdParameter, pageLimitParameter],
  response: 'DeliveryListResponse',
  validate: (req) => {
    const { group, issues } = withWebhookId(req);
    const limit = pageLimit(req);
    if (typeof limit !== 'number') issues.push(limit);
    if (issues.length || 'issues' in group) return { issues };
    return { input: { groupId: group.input, id: String(req.params.webhook_id), limit: limit as number } };
  },
  handle: async ({ groupId, id, limit }, account, deps, call) => {
    await requireAdmin(groupId, deps, account.caller.userId, call);
    const page = await deps.webhooks.listDeliveries({ groupId, subscriptionId: id, limit }, call);
    return { results: page.deliveries.map(toDelivery), has_more: page.hasMore };
  },
};

export const redeliver: RouteSpec<{ groupId: number; id: string; deliveryId: string }> = {
  id: 'webhooks.redeliver',
  method: 'post',
  path: '/v1/groups/{group_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver',
  scope: 'webhooks_manage',
  perMinute: 30,
  parameters: [groupIdParameter, webhookIdParameter, deliveryIdParameter],
  status: 202,
  response: 'Delivery',
  validate: (req) => {
    const { group, issues } = withWebhookId(req, true);
    if (issues.length || 'issues' in group) return { issues };
    return {
      input: { groupId: group.input, id: String(req.params.webhook_id), deliveryId: String(req.params.delivery_id) },
    };
  },
  handle: async ({ groupId, id, deliveryId }, account, deps, call) => {
    await requireAdmin(groupId, deps, account.caller.userId, call);
    const { delivery } = await deps.webhooks.redeliverDelivery({ groupId, subscriptionId: id, deliveryId }, call);
    return toDelivery(delivery!);
  },
};
