import { ORGANIZATION_FREE_EVERYWHERE, type ErasurePlan } from '@mileage/runtime/database';
import { SCHEMA } from './database';

/**
 * Every table of the `webhooks` schema as offboarding sees it (docs/operations.md, "Data lifecycle"): erased in this
 * order, or free of any organization's rows. A new table goes in one of the two.
 */
export const ERASURE_PLAN: ErasurePlan = {
  schema: SCHEMA,
  tables: [
    { table: 'deliveries' },
    { table: 'events' },
    { table: 'subscriptions' },
    {
      table: 'paused_organizations',
      withoutRowSecurity:
        "suspended organizations' ids, set by the operator's call, read by the delivery claim for all",
    },
  ],
  organizationFree: ORGANIZATION_FREE_EVERYWHERE,
};
