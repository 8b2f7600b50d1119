import type { webhooksV1 } from '@mileage/proto';
import { errors, type CallContext, type Handlers, requireOrganization } from '@mileage/runtime/grpc';
import { requireGroupId } from '@mileage/runtime/formats';

import type { OrganizationWebhooks, SubscriptionRow } from './repo';
import type { WebhooksServerDeps } from './webhooks-deps';
import { requireUuid } from './validation';

type DeliveryHandlers = Pick<Handlers<webhooksV1.WebhooksServiceServer>, 'listDeliveries' | 'redeliverDelivery'>;

/** The deliveries of a subscription: listed, and one sent again. */
export function deliveryHandlers(deps: WebhooksServerDeps): DeliveryHandlers {
  /** Runs `work` inside the call's organization on a subscription of the group there (else NOT_FOUND). */
  const withSubscription = <T>(
    ctx: CallContext,
    request: { groupId: number; subscriptionId: string },
    work: (webhooks: OrganizationWebhooks, sub: SubscriptionRow) => Promise<T>,
  ) => {
    const organizationId = requireOrganization(ctx);
    requireGroupId(request.groupId);
    requireUuid(request.subscriptionId, 'webhook subscription');
    return deps.repo.inOrganization(organizationId, async (webhooks) => {
      const sub = await webhooks.getSubscription(request.groupId, request.subscriptionId);
      if (!sub) throw errors.notFound('webhook subscription not found', 'SUBSCRIPTION_NOT_FOUND');
      return work(webhooks, sub);
    });
  };

  return {
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
  };
}
