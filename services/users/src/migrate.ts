// `npm run migrate -w @mileage/users`: applies this service's migrations to its schema and exits.
import { createLogger, loadConfigOrExit } from '@mileage/runtime';
import { z } from 'zod';
import { openDatabase } from './database';

const config = loadConfigOrExit(z.object({ DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL') }));
const logger = createLogger({ service: 'users-migrate' });
const db = openDatabase({ url: config.DATABASE_URL });
db.migrate()
  .then(({ applied }) => logger.info({ applied }, applied.length ? 'migrations applied' : 'schema up to date'))
  .catch((err: unknown) => {
    logger.error({ err }, 'migration failed');
    process.exitCode = 1;
  })
  .finally(() => db.close());
