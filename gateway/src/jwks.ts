import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';

/** The realm's keys could not be fetched: a token they would judge cannot be judged (503, never 401). */
export class KeysUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeysUnavailableError';
  }
}

export interface JwksSourceOptions {
  url: URL;
  /** Keys younger than this are used without asking the realm (default 10 min). */
  maxAgeMs?: number;
  /** At most one fetch per this interval, whatever tokens arrive (default 30 s). */
  cooldownMs?: number;
  /** Time limit of one fetch (default 5 s). */
  timeoutMs?: number;
  now?: () => number;
  fetch?: typeof fetch;
  /** Called when a refresh fails while older keys keep being used, and when refreshes work again. */
  onStale?: (stale: boolean, reason?: string) => void;
  /** Called after every successful fetch with the key ids the realm publishes now. */
  onKeys?: (kids: ReadonlySet<string>) => void;
}

/**
 * The realm's JSON Web Key Set for jose's `jwtVerify`, cached like jose's remote set (refreshed after `maxAgeMs`, and
 * when a token names an unknown `kid`, at most once per `cooldownMs`) with one difference that matters in an outage:
 * keys already known are kept past their age while a refresh fails (stale-if-error), so an identity provider outage
 * does not turn every valid token into a 401. When no key can judge a token because the realm cannot be reached, the
 * answer is KeysUnavailableError (503), never "invalid token".
 */
export class JwksSource {
  private keys: ReturnType<typeof createLocalJWKSet> | undefined;
  private fetchedAt = -Infinity;
  private attemptedAt = -Infinity;
  private lastError: string | undefined;
  private inFlight: Promise<void> | undefined;
  private stale = false;
  private readonly maxAgeMs: number;
  private readonly cooldownMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: JwksSourceOptions) {
    this.maxAgeMs = options.maxAgeMs ?? 10 * 60_000;
    this.cooldownMs = options.cooldownMs ?? 30_000;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.now = options.now ?? Date.now;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** The function `jwtVerify` calls for a token's key. */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    await this.refreshWhenOld();
    if (!this.keys) throw new KeysUnavailableError(`the realm's signing keys could not be fetched (${this.lastError})`);
    try {
      return await this.keys(header, token);
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSNoMatchingKey)) throw err;
      // A kid we do not know: the realm may have rotated its keys. Ask again, unless we asked moments ago.
      if (this.now() - this.attemptedAt >= this.cooldownMs) {
        await this.refresh();
        if (this.lastError === undefined) return this.keys(header, token);
      }
      if (this.lastError !== undefined)
        throw new KeysUnavailableError(`the token's signing key is unknown and the realm cannot be reached`);
      throw err;
    }
  };

  /** Fetches the keys again once they are older than `maxAgeMs` (throttled by the cooldown). */
  async refreshWhenOld(): Promise<void> {
    if (!this.keys || this.now() - this.fetchedAt >= this.maxAgeMs) await this.refresh();
  }

  /** Whether keys were ever fetched: from then on a token can be judged, with stale keys if need be (readiness). */
  get loaded(): boolean {
    return this.keys !== undefined;
  }

  /** Fetches the keys now, whatever the cooldown (the start-up fetch); rejects when the realm cannot be reached. */
  async load(): Promise<void> {
    await this.refresh(true);
    if (this.lastError !== undefined) throw new KeysUnavailableError(`the realm's signing keys: ${this.lastError}`);
  }

  /** One fetch at a time; a failure keeps the keys we have. Throttled by the cooldown unless forced. */
  private refresh(force = false): Promise<void> {
    if (this.inFlight) return this.inFlight;
    if (!force && this.now() - this.attemptedAt < this.cooldownMs) return Promise.resolve();
    this.attemptedAt = this.now();
    this.inFlight = this.fetchKeys()
      .then((jwks) => {
        this.keys = createLocalJWKSet(jwks);
        this.fetchedAt = this.now();
        this.lastError = undefined;
        this.setStale(false);
        this.options.onKeys?.(new Set(jwks.keys.flatMap((key) => (typeof key.kid === 'string' ? [key.kid] : []))));
      })
      .catch((err: unknown) => {
        this.lastError = err instanceof Error ? err.message : String(err);
        if (this.keys) this.setStale(true, this.lastError);
      })
      .finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async fetchKeys(): Promise<JSONWebKeySet> {
    const res = await this.fetchImpl(this.options.url, {
      headers: { accept: 'application/json' },
      redirect: 'manual',
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    if (res.status !== 200) throw new Error(`the JWKS endpoint answered ${res.status}`);
    const body = (await res.json()) as Partial<JSONWebKeySet>;
    if (!Array.isArray(body.keys)) throw new Error('the JWKS endpoint answered without a "keys" array');
    return body as JSONWebKeySet;
  }

  private setStale(stale: boolean, reason?: string): void {
    if (stale === this.stale) return;
    this.stale = stale;
    this.options.onStale?.(stale, reason);
  }
}
