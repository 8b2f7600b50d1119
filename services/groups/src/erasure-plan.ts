import { ORGANIZATION_FREE_EVERYWHERE, type ErasurePlan } from '@mileage/runtime/database';
import { SCHEMA } from './database';

/**
 * Every table of the `groups` schema as offboarding sees it (docs/operations.md, "Data lifecycle"): erased in this
 * order, or free of any organization's rows. A new table goes in one of the two.
 */
export const ERASURE_PLAN: ErasurePlan = {
  schema: SCHEMA,
  tables: [
    { table: 'team_members' },
    { table: 'teams' },
    { table: 'member_organizations' },
    { table: 'provisioning_audit' },
  ],
  organizationFree: ORGANIZATION_FREE_EVERYWHERE,
};
