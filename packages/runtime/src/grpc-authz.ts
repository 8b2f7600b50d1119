import type * as grpc from '@grpc/grpc-js';

/**
 * Who may call what on the internal gRPC hop, when mutual TLS is on. Every process's certificate carries one
 * SPIFFE-style URI SAN, `spiffe://<trust domain>/ns/<namespace>/sa/<service account>`; GRPC_TLS_SPIFFE_PREFIX is the
 * part before the component's name (e.g. `spiffe://cluster.local/ns/mileage/sa/mileage-`), so an identity names a
 * component exactly when it is that prefix followed by nothing but the component's name.
 */
export const COMPONENTS = ['gateway', 'users', 'groups', 'drives', 'scim', 'webhooks', 'operator', 'seed'] as const;
/**
 * A caller on the internal hop: a process of the platform, `operator` (`npm run org` with an operator's certificate),
 * or `seed` (the demo-data loader of the stacks on one machine: `npm start`; no installation issues it a certificate).
 */
export type Component = (typeof COMPONENTS)[number];

/**
 * For each method (its gRPC path), the components that may call it: those whose code calls it, nobody else (least
 * privilege). A method only `seed` may call has no caller in an installation: the development stack's demo data
 * is written through it.
 * grpc.health.v1 (probes, the circuit breaker's probe) and reflection are not listed: every caller that passed the
 * TLS handshake may use them. A unit test checks that every method of the generated services is listed.
 */
export const GRPC_CALLERS: Readonly<Record<string, readonly Component[]>> = {
  // Users: SCIM provisions users; the gateway reads them in batches (accounts, group members) and the feed.
  '/mileage.users.v1.UsersService/GetUser': ['scim', 'operator'],
  '/mileage.users.v1.UsersService/BatchGetUsers': ['gateway', 'scim'],
  '/mileage.users.v1.UsersService/CreateUser': ['scim', 'seed'],
  '/mileage.users.v1.UsersService/UpdateUser': ['scim'],
  '/mileage.users.v1.UsersService/DeleteUser': ['scim'],
  '/mileage.users.v1.UsersService/ListUsers': ['scim'],
  '/mileage.users.v1.UsersService/BatchFindUsersByUserName': ['scim'],
  '/mileage.users.v1.UsersService/ListProvisioningEvents': ['gateway'],
  // Organizations: the gateway's organization routes and SCIM credentials; the operator's commands.
  '/mileage.users.v1.OrganizationsService/GetOrganization': ['gateway', 'seed'],
  '/mileage.users.v1.OrganizationsService/CreateOrganization': ['operator', 'seed'],
  '/mileage.users.v1.OrganizationsService/SetOrganizationAdmin': ['operator', 'seed'],
  '/mileage.users.v1.OrganizationsService/CreateScimToken': ['gateway'],
  '/mileage.users.v1.OrganizationsService/ListScimTokens': ['gateway'],
  '/mileage.users.v1.OrganizationsService/RevokeScimToken': ['gateway'],
  '/mileage.users.v1.OrganizationsService/ResolveScimToken': ['gateway'],
  // Groups: the gateway's group and drive routes, Drives (a report's group), SCIM (groups), Webhooks (a group exists).
  '/mileage.groups.v1.GroupsService/GetGroup': ['gateway', 'scim'],
  '/mileage.groups.v1.GroupsService/ListAdministeredGroups': ['gateway'],
  '/mileage.groups.v1.GroupsService/CheckGroupAdmin': ['gateway', 'drives'],
  '/mileage.groups.v1.GroupsService/CreateGroup': ['seed'],
  '/mileage.groups.v1.GroupsService/UpdateGroup': ['scim'],
  '/mileage.groups.v1.GroupsService/PatchGroup': ['scim'],
  '/mileage.groups.v1.GroupsService/SetMemberRoles': [],
  '/mileage.groups.v1.GroupsService/RemoveMembers': [],
  '/mileage.groups.v1.GroupsService/ListGroups': ['scim', 'webhooks'],
  '/mileage.groups.v1.GroupsService/ListProvisioningEvents': ['gateway'],
  // Drives: the gateway reads; nothing of the platform writes drives over gRPC yet (the demo data does).
  '/mileage.drives.v1.DrivesService/ListUserDrives': ['gateway'],
  '/mileage.drives.v1.DrivesService/ListReportedDrives': ['gateway'],
  '/mileage.drives.v1.DrivesService/CreateDrive': ['seed'],
  '/mileage.drives.v1.DrivesService/UpdateDrive': [],
  '/mileage.drives.v1.DrivesService/ReportDrive': ['seed'],
  '/mileage.drives.v1.DrivesService/ReviewReportedDrive': ['seed'],
  '/mileage.drives.v1.DrivesService/DeleteDrive': ['seed'],
  '/mileage.drives.v1.DrivesService/WithdrawReport': ['seed'],
  // SCIM: the gateway's /scim/v2.
  '/mileage.scim.v1.ScimService/HandleRequest': ['gateway'],
  '/mileage.scim.v1.ScimService/HandleRequests': ['gateway'],
  // Webhooks: the gateway's webhook routes; the outbox relays of Users and Drives publish events.
  '/mileage.webhooks.v1.WebhooksService/CreateSubscription': ['gateway'],
  '/mileage.webhooks.v1.WebhooksService/ListSubscriptions': ['gateway'],
  '/mileage.webhooks.v1.WebhooksService/DeleteSubscription': ['gateway'],
  '/mileage.webhooks.v1.WebhooksService/ListDeliveries': ['gateway'],
  '/mileage.webhooks.v1.WebhooksService/RedeliverDelivery': ['gateway'],
  '/mileage.webhooks.v1.WebhooksService/PublishEvents': ['users', 'drives'],
};

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
