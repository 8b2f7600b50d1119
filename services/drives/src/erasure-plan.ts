import { ORGANIZATION_FREE_EVERYWHERE, type ErasurePlan } from '@mileage/runtime/database';
import { SCHEMA } from './database';

/**
 * Every table of the `drives` schema as offboarding sees it (docs/operations.md, "Data lifecycle"): erased in this
 * order (a report's comments before the report, reports before their drives), or free of any organization's rows. A
 * new table goes in one of the two.
 */
export const ERASURE_PLAN: ErasurePlan = {
  schema: SCHEMA,
  tables: [
    { table: 'review_comments' },
    { table: 'drive_reports' },
    { table: 'report_tombstones' },
    { table: 'drive_tombstones' },
    { table: 'drives' },
    { table: 'outbox' },
  ],
  organizationFree: {
    ...ORGANIZATION_FREE_EVERYWHERE,
    tombstone_purges: "the purge's one bookkeeping row: a time, no organization",
    restore_epochs: 'the restore epochs the database has been in: ids and times, no organization',
  },
};
