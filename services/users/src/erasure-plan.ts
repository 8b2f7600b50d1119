import { ORGANIZATION_FREE_EVERYWHERE, type ErasurePlan } from '@mileage/runtime/database';
import { SCHEMA } from './database';

/**
 * Every table of the `users` schema as offboarding sees it (docs/operations.md, "Data lifecycle"): erased in this
 * order, the organization's own row last, or free of any organization's rows. A new table goes in one of the two.
 */
export const ERASURE_PLAN: ErasurePlan = {
  schema: SCHEMA,
  tables: [
    { table: 'user_email_values' },
    { table: 'scim_tokens' },
    { table: 'provisioning_audit' },
    // The export records (their archives are deleted from the store before: export-job.ts).
    { table: 'organization_exports' },
    { table: 'outbox' },
    { table: 'users' },
    { table: 'organizations', organizationColumn: 'id' },
  ],
  organizationFree: {
    ...ORGANIZATION_FREE_EVERYWHERE,
    organization_offboardings: "the operator's offboarding record and erasure receipt: ids, times, counts",
  },
};
