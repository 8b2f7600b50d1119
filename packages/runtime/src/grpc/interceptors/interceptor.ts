import type * as grpc from '@grpc/grpc-js';
import { METHOD_RULES, type Component, type MethodRules } from '@mileage/proto';
import type { Caller } from '../grpc-authz';

/**
 * A call on its way to its handler, as the server's interceptors see it: its method's rules (its `.proto` options),
 * and what the interceptors before learnt of it.
 */
export interface InboundCall {
  /** `/package.Service/Method`. */
  readonly path: string;
  readonly rules: MethodRules<Component>;
  readonly request: unknown;
  readonly metadata: grpc.Metadata;
  readonly requestId: string;
  /** The grpc-js call, for its connection's peer certificate. */
  readonly peer: Pick<grpc.ServerUnaryCall<unknown, unknown>, 'getAuthContext'>;
  /** The caller its mutual-TLS certificate names (set by `callerIdentity`; undefined without mutual TLS). */
  caller?: Caller;
  /** The organization the call acts inside (set by `organizationScope`; undefined when it acts in none). */
  organizationId?: number;
}

/** The rest of the chain: the next interceptor, or the handler. */
export type Next = (call: InboundCall) => Promise<unknown>;

/** One rule of the hop, as connect-es writes its interceptors: given the rest of the chain, the chain with it first. */
export type Interceptor = (next: Next) => Next;

/** `interceptors` in order (the first sees a call first), then `handler`. */
export function chain(interceptors: readonly Interceptor[], handler: Next): Next {
  return interceptors.reduceRight((next, interceptor) => interceptor(next), handler);
}

/** The rules of the method at `path`: its service's registration's own, else the generated ones of proto/. */
export function rulesOf(
  path: string,
  rules: Readonly<Record<string, MethodRules<Component>>> = METHOD_RULES,
): MethodRules<Component> {
  const found = rules[path];
  if (!found) throw new Error(`${path} declares no (mileage.rpc.v1.rules) option in its .proto`);
  return found;
}

/** The metric labels of a method path. */
export function methodLabels(path: string): { grpc_service: string; grpc_method: string } {
  const [, service = '', method = path] = /^\/([^/]+)\/([^/]+)$/.exec(path) ?? [];
  return { grpc_service: service, grpc_method: method };
}
