import type * as grpc from '@grpc/grpc-js';
import { METHOD_RULES, type Component, type MethodRules } from '@mileage/proto';

/**
 * Whether a client sends a call again, as it was, when a connection dropped it unanswered: exactly when its `.proto`
 * declares `idempotency_level` NO_SIDE_EFFECTS (reads) or IDEMPOTENT (Resolve: it only stamps a last-used time).
 * Not SCIM's HandleRequests, although it carries reads only: each read's attestation may be used once, so the gateway
 * sends a read that got no answer again itself, under a fresh attestation.
 */
export function isRetried(rules: Pick<MethodRules, 'idempotency'>): boolean {
  return rules.idempotency !== 'unknown';
}

/**
 * The retry policy of a client's grpc-js service config: the retried methods (isRetried) once more on UNAVAILABLE. A
 * connection a server closes at its maximum age can refuse a call that raced its GOAWAY, and grpc-js's single
 * transparent retry can meet a second closing connection. Other calls are not retried here (their callers handle
 * unknown outcomes).
 */
export function retryMethodConfig(
  definition: grpc.ServiceDefinition,
  rules: Readonly<Record<string, MethodRules<Component>>> = METHOD_RULES,
): object[] {
  const names = Object.values(definition)
    .filter((method) => rules[method.path] && isRetried(rules[method.path]!))
    .map((method) => {
      const [, service, name] = /^\/([^/]+)\/([^/]+)$/.exec(method.path)!;
      return { service, method: name };
    });
  if (names.length === 0) return [];
  return [
    {
      name: names,
      retryPolicy: {
        maxAttempts: 2,
        initialBackoff: '0.02s',
        maxBackoff: '0.1s',
        backoffMultiplier: 2,
        retryableStatusCodes: ['UNAVAILABLE'],
      },
    },
  ];
}
