import type { webhooksV1 } from '@mileage/proto';
import { errors, type Handlers, requireOrganization } from '@mileage/runtime/grpc';
import { requireGroupId } from '@mileage/runtime/formats';

import { toSubscription } from './repo';
import { newSecret } from './secrets';
import type { WebhooksServerDeps } from './webhooks-deps';
import { checkUrl, resolveTarget, TargetRefused } from './targets';
import { requireUuid, validateEvents } from './validation';

type SubscriptionHandlers = Pick<
  Handlers<webhooksV1.WebhooksServiceServer>,
  'createSubscription' | 'listSubscriptions' | 'deleteSubscription'
>;

/** A group's webhook subscriptions: created (their target checked, their secret shown once), listed, deleted. */
export function subscriptionHandlers(deps: WebhooksServerDeps): SubscriptionHandlers {
  const { repo } = deps;
  return {
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
  };
}
