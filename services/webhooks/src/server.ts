import { filterV1, groupsV1, webhooksV1 } from '@mileage/proto';
import {
  errors,
  isOrganizationId,
  isUserId,
  requireOrganization,
  timestampToDate,
  timestampToIso,
  WEBHOOK_EVENT_TYPES,
  type CallContext,
  type Handlers,
  type Logger,
  type PromiseClient,
  type ServiceRegistration,
} from '@mileage/runtime';
import {
  WebhooksRepository,
  toSubscription,
  type IncomingEvent,
  type OrganizationWebhooks,
  type SubscriptionRow,
} from './repo';
import { newSecret, type SecretBox } from './secrets';
import { checkUrl, resolveTarget, TargetRefused, type Resolver, type TargetPolicy } from './targets';
import type { DeliveryWorker } from './worker';

export interface WebhooksServerDeps {
  repo: WebhooksRepository;
  secrets: SecretBox;
  policy: TargetPolicy;
  resolver: Resolver;
  /** To find a user's groups (user.deactivated carries none), inside the event's organization. */
  groups: PromiseClient<groupsV1.GroupsServiceClient>;
  worker?: Pick<DeliveryWorker, 'wake'>;
  logger?: Logger;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MAX_EVENTS_PER_PUBLISH = 1000;
const EVENT_TYPES = new Set<string>(WEBHOOK_EVENT_TYPES);

function requireGroupId(id: number): void {
  if (!Number.isSafeInteger(id) || id <= 0)
    throw errors.invalidArgument('group_id must be a positive integer', [
      { field: 'group_id', description: 'positive integer' },
    ]);
}

/** A malformed id names nothing: the same answer as an unknown one (the gateway has refused malformed ones). */
function requireUuid(id: string, what: string): void {
  if (!UUID.test(id)) throw errors.notFound(`${what} not found`);
}

/** The event types of a subscription: at least one, each known, none twice. */
export function validateEvents(events: string[]): void {
  const problems = [];
  if (!events.length) problems.push({ field: 'events', description: 'at least one event type' });
  const seen = new Set<string>();
  events.forEach((e, i) => {
    if (!EVENT_TYPES.has(e))
      problems.push({ field: `events.${i}`, description: `one of ${WEBHOOK_EVENT_TYPES.join(', ')}` });
    else if (seen.has(e)) problems.push({ field: `events.${i}`, description: 'listed twice' });
    seen.add(e);
  });
  if (problems.length) throw errors.invalidArgument('invalid events', problems);
}

/**
 * The WebhooksService handlers; process wiring lives in main.ts. A client's call acts inside the organization it
 * carries: a subscription of another organization is the same NOT_FOUND as one that does not exist.
 */
export function createServer(deps: WebhooksServerDeps): ServiceRegistration {
  const { repo } = deps;

  /** Runs `work` inside the call's organization on a subscription of the group there (else NOT_FOUND). */
  const withSubscription = <T>(
    ctx: CallContext,
    request: { groupId: number; subscriptionId: string },
    work: (webhooks: OrganizationWebhooks, sub: SubscriptionRow) => Promise<T>,
  ) => {
    const organizationId = requireOrganization(ctx);
    requireGroupId(request.groupId);
    requireUuid(request.subscriptionId, 'webhook subscription');
    return repo.inOrganization(organizationId, async (webhooks) => {
      const sub = await webhooks.getSubscription(request.groupId, request.subscriptionId);
      if (!sub) throw errors.notFound('webhook subscription not found', 'SUBSCRIPTION_NOT_FOUND');
      return work(webhooks, sub);
    });
  };

  /**
   * The groups whose subscribers hear a user.deactivated without a group: the user's groups (in the event's
   * organization, which the Groups service is told) that subscribe to it.
   */
  const groupsOfUser = async (organizationId: number, userId: string, subscribed: Set<number>): Promise<number[]> => {
    const filter: filterV1.Filter = {
      expr: {
        $case: 'comparison',
        value: {
          attribute: 'members.value',
          operator: filterV1.Operator.OPERATOR_EQ,
          value: { $case: 'stringValue', value: userId },
        },
      },
    };
    const found: number[] = [];
    for (let offset = 0; ; offset += 1000) {
      const { groups, totalSize } = await deps.groups.listGroups(
        { filter, offset, limit: 1000, excludeMembers: true },
        { organizationId },
      );
      found.push(...groups.map((g) => g.id));
      if (!groups.length || offset + groups.length >= totalSize) break;
    }
    return found.filter((g) => subscribed.has(g));
  };

  /** Stores events of one organization with their deliveries, after finding the groups of groupless ones. */
  const publishInOrganization = async (organizationId: number, events: IncomingEvent[]) => {
    // Events without a group (user.deactivated): the user's groups that have subscribers to it, if any has. The
    // Groups service is asked outside the transaction (no transaction held open across a remote call).
    const groupless = events.filter((e) => e.groupId === null && e.userId);
    if (groupless.length) {
      const subscribedTo = await repo.inOrganization(organizationId, async (webhooks) => {
        const byType = new Map<string, Set<number>>();
        for (const type of new Set(groupless.map((e) => e.type)))
          byType.set(type, await webhooks.groupsSubscribedTo(type));
        return byType;
      });
      for (const e of groupless) {
        const subscribed = subscribedTo.get(e.type)!;
        if (subscribed.size) e.targetGroups = await groupsOfUser(organizationId, e.userId!, subscribed);
      }
    }
    return repo.inOrganization(organizationId, (webhooks) => webhooks.publish(events));
  };

  const handlers: Handlers<webhooksV1.WebhooksServiceServer> = {
    async createSubscription(request, ctx) {
      const organizationId = requireOrganization(ctx);
      requireGroupId(request.groupId);
      validateEvents(request.events);
      let url: URL;
      try {
        url = checkUrl(request.url, deps.policy);
        await resolveTarget(url, deps.policy, deps.resolver);
      } catch (err) {
        if (err instanceof TargetRefused) {
          deps.logger?.info({ group_id: request.groupId, reason: err.detail }, 'webhook subscription target refused');
          throw errors.invalidArgument(`url refused: ${err.message}`, [{ field: 'url', description: err.message }]);
        }
        throw err;
      }
      const secret = newSecret();
      const sealed = deps.secrets.seal(secret);
      const created = await repo.inOrganization(organizationId, (webhooks) =>
        webhooks.createSubscription(request.groupId, url.href, request.events, sealed),
      );
      if (created === 'duplicate')
        throw errors.alreadyExists('the group already has a webhook for this URL', 'SUBSCRIPTION_EXISTS');
      if (created === 'full')
        throw errors.alreadyExists('the group has the maximum number of webhooks (10)', 'SUBSCRIPTIONS_FULL');
      deps.logger?.info(
        { subscription_id: created.id, group_id: request.groupId, host: url.host, events: request.events },
        'webhook subscription created',
      );
      return { subscription: toSubscription(created), secret };
    },

    async listSubscriptions(request, ctx) {
      const organizationId = requireOrganization(ctx);
      requireGroupId(request.groupId);
      const rows = await repo.inOrganization(organizationId, (webhooks) => webhooks.listSubscriptions(request.groupId));
      return { subscriptions: rows.map(toSubscription) };
    },

    async deleteSubscription(request, ctx) {
      const organizationId = requireOrganization(ctx);
      requireGroupId(request.groupId);
      requireUuid(request.subscriptionId, 'webhook subscription');
      const deleted = await repo.inOrganization(organizationId, (webhooks) =>
        webhooks.deleteSubscription(request.groupId, request.subscriptionId),
      );
      if (!deleted) throw errors.notFound('webhook subscription not found', 'SUBSCRIPTION_NOT_FOUND');
      deps.logger?.info(
        { subscription_id: request.subscriptionId, group_id: request.groupId },
        'webhook subscription deleted',
      );
      return {};
    },

    async listDeliveries(request, ctx) {
      if (request.limit < 0 || request.limit > 1000)
        throw errors.invalidArgument('limit must be between 1 and 1000', [{ field: 'limit', description: '1..1000' }]);
      return withSubscription(ctx, request, (webhooks, sub) => webhooks.listDeliveries(sub.id, request.limit || 100));
    },

    async redeliverDelivery(request, ctx) {
      const delivery = await withSubscription(ctx, request, (webhooks, sub) => {
        if (!/^[1-9][0-9]{0,17}$/.test(request.deliveryId)) throw errors.notFound('delivery not found');
        return webhooks.redeliver(sub.id, request.deliveryId);
      });
      if (!delivery) throw errors.notFound('delivery not found', 'DELIVERY_NOT_FOUND');
      deps.worker?.wake();
      return { delivery };
    },

    // System input from the outbox relays (no organization context): each event names its own organization.
    async publishEvents(request) {
      if (request.events.length > MAX_EVENTS_PER_PUBLISH)
        throw errors.invalidArgument(`at most ${MAX_EVENTS_PER_PUBLISH} events per call`, [
          { field: 'events', description: `at most ${MAX_EVENTS_PER_PUBLISH}` },
        ]);
      const events: IncomingEvent[] = [];
      const problems: { field: string; description: string }[] = [];
      request.events.forEach((e, i) => {
        const at = (field: string, description: string) =>
          problems.push({ field: `events.${i}.${field}`, description });
        if (!UUID.test(e.id)) at('id', 'a UUID');
        if (!EVENT_TYPES.has(e.type)) at('type', 'a known event type');
        if (!isOrganizationId(e.organizationId)) at('organization_id', 'a positive integer');
        if (!Number.isSafeInteger(e.groupId) || e.groupId < 0) at('group_id', 'a positive integer or 0');
        if (e.userId && !isUserId(e.userId)) at('user_id', 'a user id');
        if (!e.occurTime || Number.isNaN(timestampToDate(e.occurTime).getTime())) at('occur_time', 'required');
        let data: unknown;
        try {
          data = JSON.parse(e.dataJson || '{}');
        } catch {
          data = undefined;
        }
        if (typeof data !== 'object' || data === null || Array.isArray(data)) at('data_json', 'a JSON object');
        events.push({
          id: e.id,
          organizationId: e.organizationId,
          type: e.type,
          groupId: e.groupId || null,
          userId: e.userId || null,
          occurredAt: e.occurTime ? timestampToIso(e.occurTime) : '',
          data: data as Record<string, unknown>,
          targetGroups: e.groupId ? [e.groupId] : [],
        });
      });
      if (problems.length) throw errors.invalidArgument('invalid events', problems);

      // Each organization's events in a transaction of their own declared organization (rather than one transaction
      // across organizations that matches them explicitly): row-level security then keeps an event from reaching
      // another organization's subscribers even if a query forgot its filter. A relay's batch mostly holds one or a
      // few organizations. A failure part-way is safe: the relay publishes the batch again, and what was stored is
      // skipped by id.
      const byOrganization = new Map<number, IncomingEvent[]>();
      for (const e of events) {
        const ofOrganization = byOrganization.get(e.organizationId);
        if (ofOrganization) ofOrganization.push(e);
        else byOrganization.set(e.organizationId, [e]);
      }
      const result = { accepted: 0, deliveries: 0 };
      for (const [organizationId, ofOrganization] of byOrganization) {
        const stored = await publishInOrganization(organizationId, ofOrganization);
        result.accepted += stored.accepted;
        result.deliveries += stored.deliveries;
      }
      if (result.deliveries) deps.worker?.wake();
      return result;
    },
  };

  return { definition: webhooksV1.WebhooksServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}
