import { commonConfigSchema, env } from '@mileage/runtime';
import { z } from 'zod';

export const configSchema = commonConfigSchema.extend({
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL'),
  DATABASE_POOL_MAX: env.positiveInt(10),
  DATABASE_STATEMENT_TIMEOUT_MS: env.positiveInt(5_000),
  GRPC_ADDRESS: env.address('127.0.0.1:50051'),
  METRICS_PORT: env.port(9461),
  MIGRATE_ON_START: env.boolean(false),
});

export type Config = z.infer<typeof configSchema>;
