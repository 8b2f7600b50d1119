import type * as grpc from '@grpc/grpc-js';
import { COMPONENTS, type Component } from '@mileage/proto';

/**
 * Who calls on the internal gRPC hop, when mutual TLS is on. Every process's certificate carries one SPIFFE-style URI
 * SAN, `spiffe://<trust domain>/ns/<namespace>/sa/<service account>`; GRPC_TLS_SPIFFE_PREFIX is the part before the
 * component's name (e.g. `spiffe://cluster.local/ns/mileage/sa/mileage-`), so an identity names a component exactly
 * when it is that prefix followed by nothing but the component's name. The components are mileage.rpc.v1.Component;
 * which of them may call a method is that method's `.proto` option (grpc/interceptors/identity.ts). grpc.health.v1 (probes, the
 * circuit breaker's probe) and reflection are open to every caller that passed the TLS handshake.
 */
export { COMPONENTS, type Component };

/** The one SPIFFE id of a certificate's subject alternative names (Node's `subjectaltname` text), if exactly one. */
export function spiffeIdOf(subjectAltName: string | undefined): string | undefined {
  // Node quotes a name that holds a comma, so a plain entry ends at ", ".
  const ids = (subjectAltName ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('URI:spiffe://'))
    .map((entry) => entry.slice('URI:'.length));
  return ids.length === 1 ? ids[0] : undefined;
}

/** The component a SPIFFE id names under `prefix`: the prefix followed by exactly a component's name. */
export function componentOf(spiffeId: string | undefined, prefix: string): Component | undefined {
  if (!spiffeId?.startsWith(prefix)) return undefined;
  const name = spiffeId.slice(prefix.length);
  return (COMPONENTS as readonly string[]).includes(name) ? (name as Component) : undefined;
}

export interface Caller {
  /** The peer certificate's SPIFFE id (undefined: none, or more than one). */
  spiffeId: string | undefined;
  /** The component it names, or `unknown` (a metric label: bounded). */
  component: Component | 'unknown';
}

const UNKNOWN: Caller = { spiffeId: undefined, component: 'unknown' };
/** Distinct peer certificates remembered; a deployment has a handful (one per component and renewal). */
const CACHED_PEERS = 256;

/** A server call as grpc-js hands it to a handler: its auth context, and (internally) the stream it arrived on. */
type ServerCall = Pick<grpc.ServerUnaryCall<unknown, unknown>, 'getAuthContext'>;

/**
 * The HTTP/2 session (one TLS connection) a call arrived on, through grpc-js's internals (1.14: the handler's call →
 * its intercepting call → the HTTP/2 stream); undefined where they differ. grpc-js offers no per-connection hook.
 */
export function sessionOf(call: ServerCall): object | undefined {
  const session = (call as { call?: { stream?: { session?: unknown } } }).call?.stream?.session;
  return typeof session === 'object' && session !== null ? session : undefined;
}

/**
 * The callers of a server with mutual TLS: their identity from the verified peer certificate of the call's
 * connection. grpc-js builds that certificate as an object (TLSSocket#getPeerCertificate) on every call's
 * getAuthContext, ~150 µs of CPU measured under load (docs/benchmarks.md), so the caller is read once per
 * connection: Node's HTTP/2 server disables TLS renegotiation, so a connection's peer certificate never changes. The
 * identity is kept per distinct certificate too (its subject alternative names), for the few connections of each peer.
 */
export class CallerIdentities {
  private readonly cache = new Map<string, Caller>();
  private readonly connections = new WeakMap<object, Caller>();

  constructor(private readonly prefix: string) {}

  of(call: ServerCall): Caller {
    const session = sessionOf(call);
    const known = session && this.connections.get(session);
    if (known) return known;
    const caller = this.fromCertificate(call);
    if (session) this.connections.set(session, caller);
    return caller;
  }

  private fromCertificate(call: ServerCall): Caller {
    const subjectAltName = call.getAuthContext().sslPeerCertificate?.subjectaltname;
    if (!subjectAltName) return UNKNOWN;
    let caller = this.cache.get(subjectAltName);
    if (!caller) {
      const spiffeId = spiffeIdOf(subjectAltName);
      caller = { spiffeId, component: componentOf(spiffeId, this.prefix) ?? 'unknown' };
      if (this.cache.size >= CACHED_PEERS) this.cache.clear();
      this.cache.set(subjectAltName, caller);
    }
    return caller;
  }
}
