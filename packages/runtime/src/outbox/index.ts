export {
  createOutboxTable,
  OUTBOX_RELAY_READS_ALL,
  outboxOrganizationContractStatements,
  outboxOrganizationExpandStatements,
  recordEvent,
  WEBHOOK_EVENT_TYPES,
} from './outbox';
export {
  OutboxRelay,
  outboxRelayConfigShape,
  outboxRelayTasks,
  toWebhookEvent,
  webhooksClientSpec,
} from './outbox-relay';
