import { errors } from '@mileage/runtime/grpc';
import { WEBHOOK_EVENT_TYPES } from '@mileage/runtime/outbox';

/** A subscription's or an event's id: a UUID in lower case. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const EVENT_TYPES = new Set<string>(WEBHOOK_EVENT_TYPES);

/** A malformed id names nothing: the same answer as an unknown one (the gateway has refused malformed ones). */
export function requireUuid(id: string, what: string): void {
  if (!UUID.test(id)) throw errors.notFound(`${what} not found`);
}

/** The event types of a subscription: at least one, each known, none twice. */
export function validateEvents(events: string[]): void {
  const problems = [];
  if (!events.length) problems.push({ field: 'events', description: 'at least one event type' });
  const seen = new Set<string>();
  events.forEach((e, i) => {
    if (!EVENT_TYPES.has(e))
      problems.push({ field: `events.${i}`, description: `one of ${WEBHOOK_EVENT_TYPES.join(', ')}` });
    else if (seen.has(e)) problems.push({ field: `events.${i}`, description: 'listed twice' });
    seen.add(e);
  });
  if (problems.length) throw errors.invalidArgument('invalid events', problems);
}
