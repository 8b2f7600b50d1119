import { serviceDatabase } from '@mileage/runtime/service';

/** The `webhooks` schema, its login's application_name and this folder's migrations/, derived from the service's name. */
export const { SCHEMA, openDatabase } = serviceDatabase('webhooks', __dirname);
