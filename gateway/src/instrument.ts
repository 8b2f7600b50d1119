// Loaded first by main.ts so that instrumentation is in place before http, express and grpc-js load.
import { startTracing } from '@mileage/runtime/tracing';

export const tracing = startTracing('gateway');
