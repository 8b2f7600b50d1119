/**
 * The transaction setting the row-level security policies compare with (tenancy.ts): in a module of its own, so that
 * code running in a worker thread (joinSnapshot) declares its organization without loading the rest of tenancy.
 */
export const ORGANIZATION_SETTING = 'mileage.organization_id';
