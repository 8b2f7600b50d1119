import {
  decodeJwt,
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { DEFAULT_ORGANIZATION_CLAIM } from '@mileage/runtime/formats';
import { isIPv4, isIPv6 } from 'node:net';
import { JwksSource, KeysUnavailableError } from './jwks';
import { namedOrganization, type NamedOrganization } from './organization-claim';

export interface Caller {
  /** Token subject. */
  subject: string;
  /** Platform user id (claim `user_id` by default); absent in client-credentials tokens. */
  userId?: string;
  /** OAuth client the token was issued to (`azp`, else `client_id`). */
  clientId?: string;
  scopes: Set<string>;
  expiresAt: number;
  /** The organization the token names (a provisioning client's claim, or a SCIM secret token's); see organization-credentials.ts. */
  organization?: NamedOrganization;
}

/** Why a token was refused: the label of the refusals metric, a fixed set (never told to the client). */
export type RefusalReason =
  | 'malformed'
  | 'type'
  | 'algorithm'
  | 'unknown_key'
  | 'signature'
  | 'expired'
  | 'claims'
  /** A SCIM secret token (`mscim_…`) that is malformed, unknown, revoked or expired: which is not told, even here. */
  | 'scim_token';

export class TokenError extends Error {
  /**
   * `unavailable`: the keys could not be fetched, so the token could not be judged (503, not 401). `limited`: refused
   * (for `reason`) while the client's address group has sent too many invalid tokens lately: 429, `wait` says until when.
   */
  constructor(
    message: string,
    readonly kind: 'invalid' | 'unavailable' | 'limited' = 'invalid',
    readonly reason?: RefusalReason,
    readonly wait?: { perMinute: number; retryAfterSeconds: number },
  ) {
    super(message);
    this.name = 'TokenError';
  }
}

/** A client's address, or how to read it (Express's `req.ip` parses headers: a cached token never needs it). */
export type ClientAddress = string | (() => string | undefined);

const addressOf = (address: ClientAddress | undefined) => (typeof address === 'function' ? address() : address);

export interface TokenVerifierOptions {
  issuer: string;
  audience: string;
  algorithms: string[];
  clockSkewSeconds: number;
  userIdClaim: string;
  scopeClaim: string;
  /** The claim naming a provisioning client's organization (id or alias); Keycloak's `organization` claim otherwise. */
  organizationClaim?: string;
  /** Refuse tokens whose JOSE header `typ` is not RFC 9068's `at+jwt` (Keycloak writes `JWT` unless told otherwise). */
  requireAccessTokenType?: boolean;
  /** Tokens issued (`iat`) longer ago than this are refused whatever their `exp` (default 24 h). */
  maxTokenAgeSeconds?: number;
  /**
   * Invalid tokens an address group (addressGroup) may send (`burst`, refilled at `perMinute`) before its further
   * refusals are 429s; unset: no limit.
   */
  invalidTokenLimit?: { burst: number; perMinute: number };
  /** Told of every refused token (not of those that could not be judged); `limited`: answered 429, not 401. */
  onRefused?: (reason: RefusalReason, limited: boolean) => void;
  /** Key source: the realm's JWKS URL, or a key set function (tests). */
  jwks: URL | JWTVerifyGetKey;
  /** Told when the realm's keys go stale (a refresh failed; the known keys stay in use) and when they are fresh again. */
  onKeysStale?: (stale: boolean, reason?: string) => void;
  /** Verified tokens kept in memory until they expire. */
  cacheSize?: number;
  now?: () => number;
}

/**
 * Verifies OAuth access tokens as a resource server must: signature against the realm's JWKS (cached,
 * re-fetched when a token names an unknown `kid`, at most every 30 s, kept while the realm cannot be reached:
 * `JwksSource`), only the allowed asymmetric
 * algorithms, `iss`, `aud`, `exp`/`nbf` with a small skew, the JOSE header `typ` (RFC 9068 `at+jwt`, or `JWT` unless
 * `at+jwt` is required) and the claim `typ` = Bearer where present (an ID, logout or refresh token is not an access
 * token). A verified token is remembered until it expires, so a
 * client's repeated calls skip the signature check, and its concurrent first calls share one.
 */
export class TokenVerifier {
  private readonly keys: JWTVerifyGetKey;
  private readonly remoteKeys: JwksSource | undefined;
  /**
   * Verified tokens, the instant (epoch seconds) until which they stay valid (`exp`, or earlier by the age limit) and
   * the key that verified them: an entry leaves when its key leaves the realm's JWKS.
   */
  private readonly cache = new Map<string, { caller: Caller; validUntil: number; kid: string | undefined }>();
  private readonly cacheSize: number;
  /** Tokens whose signature is being checked: their other requests wait for that check. */
  private readonly verifying = new Map<string, Promise<Caller>>();
  private readonly now: () => number;
  private readonly maxTokenAgeSeconds: number;
  private readonly invalidTokens: InvalidTokenLimiter | undefined;

  constructor(private readonly options: TokenVerifierOptions) {
    this.remoteKeys =
      options.jwks instanceof URL
        ? new JwksSource({
            url: options.jwks,
            ...(options.now ? { now: options.now } : {}),
            ...(options.onKeysStale ? { onStale: options.onKeysStale } : {}),
            onKeys: (kids) => this.forgetTokensOfRemovedKeys(kids),
          })
        : undefined;
    this.keys = this.remoteKeys?.getKey ?? (options.jwks as JWTVerifyGetKey);
    this.cacheSize = options.cacheSize ?? 10_000;
    this.now = options.now ?? Date.now;
    this.maxTokenAgeSeconds = options.maxTokenAgeSeconds ?? 24 * 3600;
    this.invalidTokens = options.invalidTokenLimit
      ? new InvalidTokenLimiter({ ...options.invalidTokenLimit, now: this.now })
      : undefined;
  }

  /** Whether the signing keys have been fetched once (JwksSource keeps them while the provider is away). */
  keysLoaded(): boolean {
    return this.remoteKeys?.loaded ?? true;
  }

  /** Fetches the signing keys now; rejects when the provider cannot be reached. */
  async loadKeys(): Promise<void> {
    await this.remoteKeys?.load();
  }

  /**
   * `clientAddress`: whose invalid tokens are counted (read only when a token is refused). A valid token is never
   * refused for its address: see InvalidTokenLimiter for why nothing is skipped before the checks.
   */
  verify(token: string, clientAddress?: ClientAddress): Promise<Caller> {
    return this.counted(clientAddress, () => this.judge(token));
  }

  /**
   * Judges a bearer secret that is not a JWT (a SCIM secret token) under the same invalid-token limit and refusal
   * count: `resolve` answers undefined for a secret that is not valid, and fails when it cannot tell (then 503).
   */
  verifyOpaque<T>(resolve: () => Promise<T | undefined>, clientAddress?: ClientAddress): Promise<T> {
    return this.counted(clientAddress, async () => {
      let found: T | undefined;
      try {
        found = await resolve();
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new TokenError(`the token could not be checked: ${reason}`, 'unavailable');
      }
      if (found === undefined) throw new TokenError('not a valid SCIM secret token', 'invalid', 'scim_token');
      return found;
    });
  }

  /**
   * Counts every refusal and charges it to its address group; a group that has used up its allowance gets its
   * refusals as 429 (`limited`, with the wait) rather than 401. Accepted tokens never touch the limiter.
   */
  private async counted<T>(clientAddress: ClientAddress | undefined, judge: () => Promise<T>): Promise<T> {
    try {
      return await judge();
    } catch (err) {
      if (!(err instanceof TokenError) || err.reason === undefined) throw err;
      const raw = this.invalidTokens ? addressOf(clientAddress) : undefined;
      const group = raw === undefined ? undefined : addressGroup(raw);
      const wait = group === undefined ? 0 : this.invalidTokens!.waitSeconds(group);
      if (group !== undefined) this.invalidTokens!.charge(group);
      this.options.onRefused?.(err.reason, wait > 0);
      if (wait > 0)
        throw new TokenError(`${err.message} (too many invalid tokens from this address)`, 'limited', err.reason, {
          perMinute: this.options.invalidTokenLimit!.perMinute,
          retryAfterSeconds: wait,
        });
      throw err;
    }
  }

  private async judge(token: string): Promise<Caller> {
    // Cached tokens skip the key lookup, so the key set's age is checked here: a key's removal must reach them too.
    await this.remoteKeys?.refreshWhenOld();
    const nowMs = this.now();
    const cached = this.cache.get(token);
    if (cached) {
      if ((cached.validUntil + this.options.clockSkewSeconds) * 1000 > nowMs) return cached.caller;
      this.cache.delete(token);
      throw new TokenError('token expired', 'invalid', 'expired');
    }
    // Concurrent requests with one unseen token (a client's first burst) share one signature check.
    const pending = this.verifying.get(token);
    if (pending) return pending;
    const verified = this.verifyAndRemember(token, nowMs).finally(() => this.verifying.delete(token));
    this.verifying.set(token, verified);
    return verified;
  }

  /**
   * The checks that need no key and no cryptography, from the unverified header and payload: junk, another realm's or
   * an expired token is refused here for the price of a base64 decode. Only a token that could be valid costs a
   * signature check (jose then checks all of this again on the verified payload).
   */
  private checkShape(token: string, nowMs: number): void {
    let header: ReturnType<typeof decodeProtectedHeader>;
    let payload: JWTPayload;
    try {
      header = decodeProtectedHeader(token);
      payload = decodeJwt(token);
    } catch {
      throw new TokenError('token is malformed', 'invalid', 'malformed');
    }
    // Before the signature: an ID or logout token (or any other typ) is refused without a key lookup.
    if (!this.acceptsType(header.typ)) throw new TokenError('not an access token', 'invalid', 'type');
    if (typeof header.alg !== 'string' || !this.options.algorithms.includes(header.alg))
      throw new TokenError('token algorithm is not allowed', 'invalid', 'algorithm');
    const claim = (name: string) => new TokenError(`token claim "${name}" is not valid`, 'invalid', 'claims');
    if (payload.iss !== this.options.issuer) throw claim('iss');
    const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if (!audiences.includes(this.options.audience)) throw claim('aud');
    if (typeof payload.sub !== 'string') throw claim('sub');
    if (payload.typ !== undefined && payload.typ !== 'Bearer')
      throw new TokenError('not an access token', 'invalid', 'type');
    const now = Math.floor(nowMs / 1000);
    const skew = this.options.clockSkewSeconds;
    if (typeof payload.exp !== 'number') throw claim('exp');
    if (payload.exp <= now - skew) throw new TokenError('token expired', 'invalid', 'expired');
    if (typeof payload.iat !== 'number' || payload.iat > now + skew) throw claim('iat');
    if (now - payload.iat - skew > this.maxTokenAgeSeconds) throw new TokenError('token expired', 'invalid', 'expired');
    if (payload.nbf !== undefined && (typeof payload.nbf !== 'number' || payload.nbf > now + skew)) throw claim('nbf');
  }

  private async verifyAndRemember(token: string, nowMs: number): Promise<Caller> {
    let payload: JWTPayload;
    let kid: string | undefined;
    try {
      this.checkShape(token, nowMs);
      ({
        payload,
        protectedHeader: { kid },
      } = await jwtVerify(token, this.keys, {
        issuer: this.options.issuer,
        audience: this.options.audience,
        algorithms: this.options.algorithms,
        clockTolerance: this.options.clockSkewSeconds,
        requiredClaims: ['exp', 'iat', 'sub'],
        // Also refuses an iat in the future beyond the skew.
        maxTokenAge: this.maxTokenAgeSeconds,
        currentDate: new Date(nowMs),
      }));
    } catch (err) {
      if (err instanceof TokenError) throw err;
      if (err instanceof KeysUnavailableError) throw new TokenError(err.message, 'unavailable');
      const [reason, message] = describeJoseError(err);
      throw new TokenError(message, 'invalid', reason);
    }
    if (payload.typ !== undefined && payload.typ !== 'Bearer')
      throw new TokenError('not an access token', 'invalid', 'type');
    const caller = this.toCaller(payload);
    if (this.cache.size >= this.cacheSize) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(token, {
      caller,
      validUntil: Math.min(payload.exp!, payload.iat! + this.maxTokenAgeSeconds),
      kid,
    });
    return caller;
  }

  /** Tokens without a `kid` cannot be matched to a key: they are verified again after every fetch. */
  private forgetTokensOfRemovedKeys(kids: ReadonlySet<string>): void {
    for (const [token, entry] of this.cache)
      if (entry.kid === undefined || !kids.has(entry.kid)) this.cache.delete(token);
  }

  /** RFC 9068 `at+jwt` (media type or short form, any case); plain `JWT` or none unless `at+jwt` is required. */
  private acceptsType(typ: string | undefined): boolean {
    const short = typ?.toLowerCase().replace(/^application\//, '');
    if (short === 'at+jwt') return true;
    return !this.options.requireAccessTokenType && (short === undefined || short === 'jwt');
  }

  private toCaller(payload: JWTPayload): Caller {
    const scopeValue = payload[this.options.scopeClaim];
    const scopes = new Set(typeof scopeValue === 'string' ? scopeValue.split(' ').filter(Boolean) : []);
    const userId = payload[this.options.userIdClaim];
    const clientId =
      typeof payload.azp === 'string'
        ? payload.azp
        : typeof payload.client_id === 'string'
          ? payload.client_id
          : undefined;
    const organization = namedOrganization(payload, this.options.organizationClaim ?? DEFAULT_ORGANIZATION_CLAIM);
    return {
      subject: payload.sub!,
      ...(typeof userId === 'string' && userId !== '' ? { userId } : {}),
      ...(clientId ? { clientId } : {}),
      scopes,
      expiresAt: payload.exp!,
      ...(organization ? { organization } : {}),
    };
  }
}

function describeJoseError(err: unknown): [RefusalReason, string] {
  if (err instanceof joseErrors.JWTExpired) return ['expired', 'token expired'];
  if (err instanceof joseErrors.JWTClaimValidationFailed) return ['claims', `token claim "${err.claim}" is not valid`];
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return ['signature', 'token signature is not valid'];
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return ['algorithm', 'token algorithm is not allowed'];
  if (err instanceof joseErrors.JWKSNoMatchingKey) return ['unknown_key', 'token signing key is not known'];
  return ['malformed', 'token is malformed'];
}

/**
 * A token bucket per client address group, charged only by refused tokens. It never stands between a valid credential
 * and its answer, however much junk its address group sent (identity providers provision many tenants from shared
 * egress addresses): nothing is skipped for a limited group, what changes is that its refusals are 429 + Retry-After,
 * which tells a misconfigured client to back off, instead of 401. The replica's CPU is protected by what a refusal
 * costs instead: TokenVerifier.checkShape refuses junk, other realms' and expired tokens from the unverified token
 * (no key, no cryptography); only a token that could be valid (allowed alg and typ, the realm's iss and aud, not
 * expired, a kid the JWKS knows — an unknown kid fetches the keys at most every 30 s) costs a signature check; a
 * well-formed SCIM secret costs one indexed read, and a repeated unknown one nothing (the negative cache). In memory,
 * per replica: what it guards is this replica. Full buckets are forgotten; at most `maxAddresses`.
 */
export class InvalidTokenLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly options: { burst: number; perMinute: number; maxAddresses?: number; now?: () => number },
  ) {}

  /** Seconds until the address may send another token to be verified; 0: now. */
  waitSeconds(address: string): number {
    const bucket = this.refilled(address);
    if (!bucket || bucket.tokens >= 1) return 0;
    return Math.max(1, Math.ceil(((1 - bucket.tokens) * 60) / this.options.perMinute));
  }

  charge(address: string): void {
    const bucket = this.refilled(address) ?? { tokens: this.options.burst, at: (this.options.now ?? Date.now)() };
    bucket.tokens = Math.max(0, bucket.tokens - 1);
    this.buckets.delete(address); // re-inserted last: the oldest-touched address is dropped first
    this.buckets.set(address, bucket);
    if (this.buckets.size > (this.options.maxAddresses ?? 100_000)) {
      const oldest = this.buckets.keys().next().value;
      if (oldest !== undefined) this.buckets.delete(oldest);
    }
  }

  private refilled(address: string): { tokens: number; at: number } | undefined {
    const bucket = this.buckets.get(address);
    if (!bucket) return undefined;
    const now = (this.options.now ?? Date.now)();
    bucket.tokens = Math.min(this.options.burst, bucket.tokens + ((now - bucket.at) / 60_000) * this.options.perMinute);
    bucket.at = now;
    if (bucket.tokens >= this.options.burst) {
      this.buckets.delete(address);
      return undefined;
    }
    return bucket;
  }
}

/**
 * Whose refusals count together: an IPv4 address, or an IPv6 /64 (one subscriber's or one host's network: its
 * addresses are free to choose, so counting each alone would give a flooder 2^64 buckets). An IPv4-mapped IPv6
 * address (`::ffff:192.0.2.1`, what a dual-stack socket reports) is its IPv4 address.
 */
export function addressGroup(address: string): string {
  if (isIPv4(address) || !isIPv6(address)) return address;
  const hextets = expandIPv6(address.replace(/%.*$/, ''));
  if (hextets.slice(0, 5).every((h) => h === 0) && hextets[5] === 0xffff)
    return [hextets[6]! >> 8, hextets[6]! & 255, hextets[7]! >> 8, hextets[7]! & 255].join('.');
  return `${hextets
    .slice(0, 4)
    .map((h) => h.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a trailing dotted IPv4 part as two groups). */
function expandIPv6(address: string): number[] {
  const [head = '', tail] = address.split('::');
  const parse = (part: string) =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)];
          const [a, b, c, d] = group.split('.').map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        });
  const first = parse(head);
  const last = tail === undefined ? [] : parse(tail);
  return [...first, ...Array<number>(8 - first.length - last.length).fill(0), ...last];
}
