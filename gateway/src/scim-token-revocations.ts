import type { Logger, Metrics } from '@mileage/runtime/telemetry';
import type { Redis } from 'ioredis';
import {
  Acknowledgements,
  acknowledgementsChannel,
  DEFAULT_ACKNOWLEDGEMENT_TIMEOUT_MS,
  SCIM_TOKEN_REVOCATIONS_CHANNEL,
} from '@mileage/runtime/formats';

/**
 * How SCIM secret token revocations reach every gateway replica before its next request (CONTRACT §7). The replica
 * that revokes drops the token from its own cache at once and publishes the token's id on a Redis channel; every
 * replica subscribes, drops it when the message arrives, and then acknowledges it on a second channel
 * (acknowledgementsChannel). The revoking replica answers the DELETE once as many replicas acknowledged as Redis
 * delivered the message to: Redis answers the publish before it writes the message to the subscribers, so its answer
 * alone did not mean they had read it (a request could reach a replica before the message did). The hot path pays
 * nothing: a cached token costs a map lookup and one boolean.
 *
 * A replica that cannot be sure it hears every revocation (its subscription is down, or Redis did not answer its
 * heartbeat) trusts no cached token: it asks the Users service on every request until it is subscribed again.
 */
export interface RevocationFeed {
  /** True while every revocation made by any replica reaches this one before its next request. */
  listening(): boolean;
  /** `listener(tokenId)` on each revocation heard; `listener(undefined)` when `listening()` may have changed. */
  subscribe(listener: (tokenId: string | undefined) => void): void;
  /**
   * Tells this replica at once, then every other replica; resolves when they have acted on it (or telling failed, or
   * a replica did not acknowledge within its timeout).
   */
  announce(tokenId: string): Promise<void>;
  close(): Promise<void>;
}

/** One gateway without Redis: its own revocations are all there are. */
export class LocalRevocations implements RevocationFeed {
  private readonly listeners: ((tokenId: string | undefined) => void)[] = [];

  listening(): boolean {
    return true;
  }

  subscribe(listener: (tokenId: string | undefined) => void): void {
    this.listeners.push(listener);
  }

  announce(tokenId: string): Promise<void> {
    for (const listener of this.listeners) listener(tokenId);
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

export const REVOCATIONS_CHANNEL = SCIM_TOKEN_REVOCATIONS_CHANNEL;
/**
 * A token id (a UUID), or `organization:<id>`, an organization's suspension changed (offboarding): anything else on
 * the channel is not ours and is ignored.
 */
const TOKEN_ID = /^(?:[0-9a-f-]{36}|organization:\d{1,15})$/i;

export interface RedisRevocationsOptions {
  /** The replica's Redis client: it publishes; its duplicate subscribes (a subscribed connection does nothing else). */
  redis: Redis;
  /** A frozen Redis keeps its connections open: a heartbeat on the subscription finds out (default 1 s). */
  heartbeatMs?: number;
  /** The channel (tests give each pair of replicas their own); its acknowledgements go on acknowledgementsChannel's. */
  channel?: string;
  /** How long a revocation waits for every replica's acknowledgement before its 204 goes without the missing ones. */
  acknowledgementTimeoutMs?: number;
  logger?: Logger;
  metrics?: Metrics;
}

/** Revocations through Redis pub/sub, for replicas that share a Redis (REDIS_URL). */
export class RedisRevocations implements RevocationFeed {
  private readonly listeners: ((tokenId: string | undefined) => void)[] = [];
  private readonly subscriber: Redis;
  private readonly channel: string;
  private readonly acknowledgementChannel: string;
  private readonly acknowledgements = new Acknowledgements();
  private subscribed = false;
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly listeningGauge;
  private readonly publishFailures;
  private readonly unacknowledged;

  constructor(private readonly options: RedisRevocationsOptions) {
    this.channel = options.channel ?? REVOCATIONS_CHANNEL;
    this.acknowledgementChannel = acknowledgementsChannel(this.channel);
    this.listeningGauge = options.metrics?.gauge({
      name: 'gateway_scim_token_revocations_listening',
      help: 'Whether this replica hears SCIM token revocations through Redis (1) or asks the Users service on every request (0)',
    });
    this.publishFailures = options.metrics?.counter({
      name: 'gateway_scim_token_revocation_publish_failures_total',
      help: 'SCIM token revocations this replica could not publish to the others (they then trust their cache at most SCIM_TOKEN_CACHE_SECONDS)',
    });
    this.unacknowledged = options.metrics?.counter({
      name: 'gateway_scim_token_revocation_unacknowledged_total',
      help: 'SCIM token revocations answered before every replica Redis delivered them to had acknowledged them (timeout)',
    });
    this.listeningGauge?.set(0);
    // Subscribed again by hand on every connection, so `listening` turns true only once the subscription is confirmed.
    const heartbeatMs = options.heartbeatMs ?? 1_000;
    this.subscriber = options.redis.duplicate({
      autoResubscribe: false,
      enableOfflineQueue: false,
      lazyConnect: true,
      commandTimeout: heartbeatMs,
    });
    this.subscriber.on('error', (err: Error) =>
      options.logger?.debug({ err: { message: err.message } }, 'redis subscription error'),
    );
    this.subscriber.on('close', () => this.setSubscribed(false));
    this.subscriber.on('ready', () => {
      this.subscriber.subscribe(this.channel, this.acknowledgementChannel).then(
        () => this.setSubscribed(true),
        () => this.subscriber.disconnect(true),
      );
    });
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.acknowledgementChannel) this.acknowledgements.heard(message);
      if (channel !== this.channel || !TOKEN_ID.test(message)) return;
      this.tell(message);
      // Acted on: the announcer may answer now. A lost acknowledgement only delays its answer (timeout).
      options.redis.publish(this.acknowledgementChannel, message).catch(() => undefined);
    });
    this.subscriber.connect().catch(() => undefined); // ioredis retries on its own
    this.heartbeat = setInterval(() => {
      if (!this.subscribed) return;
      // Over the subscribed connection: a frozen Redis (or network) answers nothing, and this replica stops trusting.
      this.subscriber.ping().catch(() => {
        this.setSubscribed(false);
        this.subscriber.disconnect(true);
      });
    }, heartbeatMs).unref();
  }

  listening(): boolean {
    return this.subscribed;
  }

  subscribe(listener: (tokenId: string | undefined) => void): void {
    this.listeners.push(listener);
  }

  async announce(tokenId: string): Promise<void> {
    this.tell(tokenId);
    const publish = () => this.options.redis.publish(this.channel, tokenId);
    try {
      // Acknowledgements come to the subscription: without one, none can be heard (and this replica caches nothing).
      if (!this.subscribed) {
        await publish();
        return;
      }
      const { receivers, acknowledged } = await this.acknowledgements.announce(
        tokenId,
        publish,
        this.options.acknowledgementTimeoutMs ?? DEFAULT_ACKNOWLEDGEMENT_TIMEOUT_MS,
      );
      if (acknowledged < receivers) {
        this.unacknowledged?.inc();
        this.options.logger?.warn(
          { token_id: tokenId, receivers, acknowledged },
          'a SCIM token revocation was not acknowledged by every replica in time; answered without them',
        );
      }
    } catch (err) {
      this.publishFailures?.inc();
      this.options.logger?.warn(
        { err: { message: err instanceof Error ? err.message : String(err) }, token_id: tokenId },
        'a SCIM token revocation could not be published; other replicas refuse the token once their cache expires',
      );
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    this.setSubscribed(false);
    this.subscriber.disconnect();
    return Promise.resolve();
  }

  private setSubscribed(subscribed: boolean): void {
    if (this.closed && subscribed) return;
    if (subscribed === this.subscribed) return;
    this.subscribed = subscribed;
    this.listeningGauge?.set(subscribed ? 1 : 0);
    if (!this.closed)
      this.options.logger?.[subscribed ? 'info' : 'warn'](
        subscribed
          ? 'hearing SCIM token revocations again: resolved tokens are cached'
          : 'not hearing SCIM token revocations (Redis): every SCIM secret token is checked with the Users service',
      );
    // Either way what was cached is forgotten: revocations may have been missed while not subscribed.
    for (const listener of this.listeners) listener(undefined);
  }

  private tell(tokenId: string): void {
    for (const listener of this.listeners) listener(tokenId);
  }
}
