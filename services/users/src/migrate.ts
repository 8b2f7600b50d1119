// `npm run migrate -w @mileage/users`: applies this service's migrations to its schema and exits.
import { runMigrations } from '@mileage/runtime/service';
import { openDatabase } from './database';

void runMigrations('users', openDatabase);
