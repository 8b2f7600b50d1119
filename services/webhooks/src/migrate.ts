// `npm run migrate -w @mileage/webhooks`: applies this service's migrations to its schema and exits.
import { runMigrations } from '@mileage/runtime/service';
import { openDatabase } from './database';

void runMigrations('webhooks', openDatabase);
