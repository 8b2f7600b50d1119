// The owners of an organization's rows, in the order offboarding erases them (docs/operations.md, "Data lifecycle"):
// the Users service last, as its organizations row is the organization itself.
import { ERASURE_PLAN as DRIVES_PLAN, openDatabase as openDrives } from '@mileage/drives';
import { ERASURE_PLAN as GROUPS_PLAN, openDatabase as openGroups } from '@mileage/groups';
import type { ErasurePlan } from '@mileage/runtime/database';
import { ERASURE_PLAN as USERS_PLAN, openDatabase as openUsers } from '@mileage/users';
import { ERASURE_PLAN as WEBHOOKS_PLAN, openDatabase as openWebhooks } from '@mileage/webhooks';

export interface ErasureOwner {
  plan: ErasurePlan;
  openDatabase: typeof openUsers;
}

export const ERASURE_OWNERS: readonly ErasureOwner[] = [
  { plan: GROUPS_PLAN, openDatabase: openGroups },
  { plan: DRIVES_PLAN, openDatabase: openDrives },
  { plan: WEBHOOKS_PLAN, openDatabase: openWebhooks },
  { plan: USERS_PLAN, openDatabase: openUsers },
];
