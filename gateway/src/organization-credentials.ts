import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { usersV1 } from '@mileage/proto';

import { ORGANIZATION_ALIAS_RULE, SCIM_SECRET_TOKEN, timestampToMillis } from '@mileage/runtime/formats';
import { type CallSettings, type PromiseClient, isOrganizationId } from '@mileage/runtime/grpc';
import { createHash } from 'node:crypto';
import type { Caller } from './auth';
import { isOrganizationReference } from './organization-claim';
import { LocalRevocations, type RevocationFeed } from './scim-token-revocations';

/**
 * Which organization a SCIM credential acts for (CONTRACT §7). A client-credentials JWT names it by a claim (the
 * configured one, default `org_id`, else Keycloak's Organizations claim `organization`) or its client is bound to one
 * by configuration (SCIM_CLIENT_ORGANIZATIONS: how an upgraded installation keeps its one client). A SCIM secret token
 * (`mscim_…`) is resolved by the Users service, which owns the tokens, from the SHA-256 of the secret.
 */

/**
 * How long a replica keeps a resolved secret token while it hears revocations (SCIM_TOKEN_CACHE_SECONDS), and its
 * bound: revocations reach the cache at once (scim-token-revocations.ts), this only bounds a lost announcement.
 */
export const DEFAULT_SCIM_TOKEN_CACHE_SECONDS = 5;
export const MAX_SCIM_TOKEN_CACHE_SECONDS = 30;
/** Unknown secrets are remembered this long, so a client retrying a wrong one costs no lookup each time. */
const NEGATIVE_TOKEN_CACHE_MS = 2_000;
/** Organizations are neither renamed nor deleted by any RPC; a short cache still picks up one created meanwhile. */
const ORGANIZATION_CACHE_MS = 30_000;
const UNKNOWN_ORGANIZATION_CACHE_MS = 5_000;
const CACHE_ENTRIES = 10_000;

/**
 * SCIM_CLIENT_ORGANIZATIONS: comma-separated `client=organization` pairs (an organization id or alias), e.g.
 * `mileage-scim=demo`. Throws on a malformed pair or a client named twice (checked at start-up).
 */
export function parseClientOrganizations(text: string): Map<string, string> {
  const bindings = new Map<string, string>();
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const match = /^([\w.:-]+)\s*=\s*(\S+)$/.exec(pair);
    if (!match || !isOrganizationReference(match[2]!))
      throw new Error(
        `"${pair}" is not client=organization (an organization id, or an alias: ${ORGANIZATION_ALIAS_RULE})`,
      );
    if (bindings.has(match[1]!)) throw new Error(`the client ${match[1]} is bound twice`);
    bindings.set(match[1]!, match[2]!);
  }
  return bindings;
}

/** A SCIM secret token the Users service recognised. */
export interface ResolvedSecretToken {
  tokenId: string;
  organizationId: number;
  /** Epoch ms of its expiry; undefined: never. */
  expiresAt: number | undefined;
}

const SECRET_TOKEN_ACTOR = 'scim_token:';
/** The audit actor (and rate-limit subject) of a SCIM secret token: its id, never the secret. */
export const secretTokenActor = (tokenId: string) => `${SECRET_TOKEN_ACTOR}${tokenId}`;

/** The caller a resolved secret token stands for: scope `scim` only, inside its organization. */
export function secretTokenCaller(token: ResolvedSecretToken): Caller {
  const actor = secretTokenActor(token.tokenId);
  return {
    subject: actor,
    clientId: actor,
    scopes: new Set(['scim']),
    expiresAt: token.expiresAt === undefined ? Number.MAX_SAFE_INTEGER : Math.floor(token.expiresAt / 1000),
    organization: { id: token.organizationId },
  };
}

interface Entry<V> {
  value: V;
  until: number;
}

/**
 * A bounded map of values that each expire at their own time; a lookup in flight is shared by its askers. `forget`
 * also disowns the lookups in flight: their answers may predate what made the entries go, so they are not kept, and
 * the askers that come after it start their own.
 */
class ExpiringCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly inFlight = new Map<string, Promise<V>>();
  private generation = 0;

  constructor(private readonly now: () => number) {}

  /** `share`: join a lookup in flight for the key (false: this asker's own lookup, as fresh as can be). */
  async get(key: string, load: () => Promise<{ value: V; ttlMs: number }>, share = true): Promise<V> {
    const entry = this.entries.get(key);
    if (entry && entry.until > this.now()) return entry.value;
    if (entry) this.entries.delete(key);
    const pending = share ? this.inFlight.get(key) : undefined;
    if (pending) return pending;
    const generation = this.generation;
    const loading = load().then(({ value, ttlMs }) => {
      if (ttlMs > 0 && generation === this.generation) this.put(key, value, this.now() + ttlMs);
      return value;
    });
    if (!share) return loading;
    const shared = loading.finally(() => {
      if (this.inFlight.get(key) === shared) this.inFlight.delete(key);
    });
    this.inFlight.set(key, shared);
    return shared;
  }

  /** Drops the entries `which` picks (all by default) and disowns every lookup in flight. */
  forget(which: (value: V) => boolean = () => true): void {
    this.generation++;
    this.inFlight.clear();
    for (const [key, entry] of this.entries) if (which(entry.value)) this.entries.delete(key);
  }

  private put(key: string, value: V, until: number): void {
    if (this.entries.size >= CACHE_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { value, until });
  }
}

const isNotFound = (err: unknown) => (err as Partial<ServiceError>).code === grpcStatus.NOT_FOUND;

export interface OrganizationCredentialsOptions {
  organizations: PromiseClient<usersV1.OrganizationsServiceClient>;
  /** SCIM_CLIENT_ORGANIZATIONS, parsed: client id → organization id or alias. */
  clientOrganizations?: ReadonlyMap<string, string>;
  /**
   * How long a replica keeps a resolved secret token while `revocations` is listening (default 5, at most 30): the
   * bound only for a revocation whose announcement was lost.
   */
  tokenCacheSeconds?: number;
  /** How revocations reach this replica; default: its own only (one gateway without Redis). */
  revocations?: RevocationFeed;
  now?: () => number;
}

/** Resolves SCIM credentials to their organization, with the caches that keep it off the hot path. */
export class OrganizationCredentials {
  private readonly now: () => number;
  private readonly tokenCacheMs: number;
  private readonly organizationsByReference: ExpiringCache<number | undefined>;
  private readonly secretTokens: ExpiringCache<ResolvedSecretToken | undefined>;
  /** Whether an organization named by an OAuth SCIM client's token is suspended (offboarding), per organization id. */
  private readonly suspensions: ExpiringCache<boolean>;
  private readonly revocations: RevocationFeed;

  constructor(private readonly options: OrganizationCredentialsOptions) {
    this.now = options.now ?? Date.now;
    const seconds = options.tokenCacheSeconds ?? DEFAULT_SCIM_TOKEN_CACHE_SECONDS;
    if (!(seconds >= 0 && seconds <= MAX_SCIM_TOKEN_CACHE_SECONDS))
      throw new Error(`the SCIM token cache may last 0 to ${MAX_SCIM_TOKEN_CACHE_SECONDS} seconds`);
    this.tokenCacheMs = seconds * 1000;
    this.organizationsByReference = new ExpiringCache(this.now);
    this.secretTokens = new ExpiringCache(this.now);
    this.revocations = options.revocations ?? new LocalRevocations();
    this.suspensions = new ExpiringCache(this.now);
    this.revocations.subscribe((tokenId) => {
      // An organization's suspension changed (`organization:<id>`): what this replica knows of suspensions goes.
      if (tokenId === undefined || tokenId.startsWith(ORGANIZATION_MESSAGE)) this.suspensions.forget();
      // Unknown secrets stay unknown whatever was revoked: the negative entries stay.
      if (tokenId === undefined || !tokenId.startsWith(ORGANIZATION_MESSAGE))
        this.secretTokens.forget(
          (token) => token !== undefined && (tokenId === undefined || token.tokenId === tokenId),
        );
    });
  }

  /**
   * A token the Users service has revoked: forgotten here at once and announced to the other replicas (resolves once
   * they have been told, so the revocation's 204 comes after).
   */
  revoked(tokenId: string): Promise<void> {
    return this.revocations.announce(tokenId);
  }

  /**
   * The organization a `scim` caller acts for; undefined when it names none that exists, or one being offboarded (a
   * secret token's organization is checked by the Users service when it resolves the token).
   */
  async organizationOf(caller: Caller, call: CallSettings): Promise<number | undefined> {
    const named = caller.organization;
    if (named && 'unusable' in named) return undefined;
    let id: number | undefined;
    if (named && 'id' in named) id = named.id;
    else {
      const reference =
        named?.reference ?? (caller.clientId ? this.options.clientOrganizations?.get(caller.clientId) : undefined);
      id = reference === undefined ? undefined : await this.resolveReference(reference, call);
    }
    if (id === undefined || caller.clientId?.startsWith(SECRET_TOKEN_ACTOR)) return id;
    return (await this.suspended(id, call)) ? undefined : id;
  }

  /**
   * Whether an organization is suspended, asked of the Users service and kept like a resolved token: while this
   * replica hears the revocation channel (where an offboarding announces `organization:<id>`), at most
   * `tokenCacheSeconds`; otherwise asked on every request.
   */
  private suspended(organizationId: number, call: CallSettings): Promise<boolean> {
    const trusted = this.revocations.listening();
    return this.suspensions.get(
      String(organizationId),
      async () => {
        const ttlMs = trusted ? this.tokenCacheMs : 0;
        try {
          await this.options.organizations.getOffboarding({ organizationId }, stripped(call));
          return { value: true, ttlMs };
        } catch (err) {
          if (isNotFound(err)) return { value: false, ttlMs };
          throw err;
        }
      },
      trusted,
    );
  }

  /** An organization's id from its id or alias; undefined when no organization has it. */
  resolveReference(reference: string, call: CallSettings): Promise<number | undefined> {
    if (!isOrganizationReference(reference)) return Promise.resolve(undefined);
    return this.organizationsByReference.get(reference, async () => {
      const key = isOrganizationId(reference)
        ? { $case: 'id' as const, value: Number(reference) }
        : { $case: 'alias' as const, value: reference };
      try {
        const { organization } = await this.options.organizations.getOrganization({ key }, stripped(call));
        return { value: organization?.id, ttlMs: ORGANIZATION_CACHE_MS };
      } catch (err) {
        if (isNotFound(err)) return { value: undefined, ttlMs: UNKNOWN_ORGANIZATION_CACHE_MS };
        throw err;
      }
    });
  }

  /**
   * The active token a SCIM secret is, or undefined for a malformed, unknown, revoked or expired one (alike). A
   * resolved token is kept while this replica hears revocations (at most `tokenCacheSeconds`); while it cannot be
   * sure it does, every request asks the Users service, alone (no shared lookup that may have started before a
   * revocation).
   */
  resolveSecretToken(secret: string, call: CallSettings): Promise<ResolvedSecretToken | undefined> {
    if (!SCIM_SECRET_TOKEN.test(secret)) return Promise.resolve(undefined);
    const trusted = this.revocations.listening();
    const digest = createHash('sha256').update(secret, 'utf8').digest();
    return this.secretTokens
      .get(
        digest.toString('base64url'),
        async () => {
          try {
            const { token } = await this.options.organizations.resolveScimToken(
              { secretSha256: digest },
              stripped(call),
            );
            if (!token) return { value: undefined, ttlMs: NEGATIVE_TOKEN_CACHE_MS };
            const expiresAt = token.expireTime ? timestampToMillis(token.expireTime) : undefined;
            const resolved = { tokenId: token.id, organizationId: token.organizationId, expiresAt };
            const ttlMs = trusted ? Math.min(this.tokenCacheMs, (expiresAt ?? Infinity) - this.now()) : 0;
            return { value: resolved, ttlMs };
          } catch (err) {
            if (isNotFound(err)) return { value: undefined, ttlMs: NEGATIVE_TOKEN_CACHE_MS };
            throw err;
          }
        },
        trusted,
      )
      .then((token) => (token && token.expiresAt !== undefined && token.expiresAt <= this.now() ? undefined : token));
  }
}

/** The revocation channel's message of an organization whose suspension changed: `organization:<id>`. */
export const ORGANIZATION_MESSAGE = 'organization:';

/** These lookups are made before an organization is known: they never carry one. */
function stripped(call: CallSettings): CallSettings {
  const { organizationId: _none, ...rest } = call;
  return rest;
}
