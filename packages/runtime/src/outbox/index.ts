export {
  createOutboxTable,
  outboxOrganizationContractStatements,
  outboxOrganizationExpandStatements,
  recordEvent,
  WEBHOOK_EVENT_TYPES,
} from './outbox';
export {
  OutboxRelay,
  type OutboxRow,
  outboxRelayConfigShape,
  outboxRelayTasks,
  toWebhookEvent,
  webhooksClientSpec,
} from './outbox-relay';
