// Loaded first by main.ts so that instrumentation is in place before grpc-js, knex and pg load.
import { startTracing } from '@mileage/runtime/tracing';

export const tracing = startTracing('scim');
