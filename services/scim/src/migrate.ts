// `npm run migrate -w @mileage/scim`: applies this service's migrations to its schema and exits.
import { runMigrations } from '@mileage/runtime';
import { openDatabase } from './database';

void runMigrations('scim', openDatabase);
