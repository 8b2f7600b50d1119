import { createDatabase, type Metrics } from '@mileage/runtime';
import * as path from 'node:path';

export const SCHEMA = 'drives';

export function openDatabase(options: {
  url: string;
  poolMax?: number;
  statementTimeoutMs?: number;
  metrics?: Metrics;
}) {
  return createDatabase({
    url: options.url,
    schema: SCHEMA,
    migrationsDirectory: path.join(__dirname, 'migrations'),
    applicationName: 'mileage-drives',
    ...(options.poolMax ? { poolMax: options.poolMax } : {}),
    ...(options.statementTimeoutMs ? { statementTimeoutMs: options.statementTimeoutMs } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });
}
