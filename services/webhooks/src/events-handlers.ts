import { filterV1, type webhooksV1 } from '@mileage/proto';
import { errors, type Handlers, isOrganizationId } from '@mileage/runtime/grpc';

import { isUserId, timestampToDate, timestampToIso } from '@mileage/runtime/formats';
import type { IncomingEvent } from './repo';
import type { WebhooksServerDeps } from './webhooks-deps';
import { EVENT_TYPES, UUID } from './validation';

const MAX_EVENTS_PER_PUBLISH = 1000;

/** The events the owners' outbox relays publish: stored with a delivery for each subscription that hears them. */
export function eventHandlers(
  deps: WebhooksServerDeps,
): Pick<Handlers<webhooksV1.WebhooksServiceServer>, 'publishEvents'> {
  const { repo } = deps;

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

  return {
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
}
