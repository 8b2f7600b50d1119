export { createServer, type WebhooksServerDeps } from './server';
export { validateEvents } from './validation';
export { openDatabase, SCHEMA } from './database';
export { OrganizationWebhooks, WebhooksRepository } from './repo';
export { deliveryPoll, DeliveryWorker, payload, retryDelayMs, type WorkerOptions } from './worker';
export { SecretBox, newSecret, sign } from './secrets';
export {
  ANY_PORT,
  checkUrl,
  classifyAddress,
  resolveTarget,
  systemResolver,
  TargetRefused,
  type Resolver,
  type TargetPolicy,
} from './targets';
export { sendWebhook, type AttemptResult, type SendOptions } from './sender';
export { configShape, defaultDeliverySchedule, deliverySchedule } from './config';
export { ERASURE_PLAN } from './erasure-plan';
