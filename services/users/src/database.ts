import { serviceDatabase } from '@mileage/runtime/service';
import { sqlSpans } from '@mileage/runtime/database';

/** The `users` schema, its login's application_name and this folder's migrations/, derived from the service's name. */
export const { SCHEMA, openDatabase } = serviceDatabase('users', __dirname, {
  appendOnlyTables: ['provisioning_audit'],
});

/** Runs one statement of this schema's data access as a span of the caller's trace. */
export const sql = sqlSpans(SCHEMA);
