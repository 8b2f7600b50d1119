/**
 * The Redis pub/sub channel on which a revoked SCIM secret token's id is announced to every gateway replica
 * (gateway/src/scim-token-revocations.ts); the operator's offboarding announces its organization's tokens there too.
 */
export const SCIM_TOKEN_REVOCATIONS_CHANNEL = 'mileage:gateway:scim-token-revocations';

/**
 * Where a replica says it has acted on a message of a revocation channel: the message again, once its cache has
 * dropped what it names. An announcer waits for as many as Redis delivered the message to.
 */
export const acknowledgementsChannel = (channel: string) => `${channel}:acknowledged`;

/** How long an announcer waits for every replica's acknowledgement before it goes on without the missing ones. */
export const DEFAULT_ACKNOWLEDGEMENT_TIMEOUT_MS = 2_000;

/** What an announcement reached: the subscribers Redis delivered it to, and how many of them acknowledged it. */
export interface Acknowledged {
  receivers: number;
  acknowledged: number;
}

interface Waiter {
  heard: number;
  needed: number;
  done(): void;
}

/**
 * An announcer's bookkeeping of acknowledgements (acknowledgementsChannel). Redis answers a `PUBLISH` with the number
 * of subscribers it delivered the message to, but writes that answer to the publisher before the message to them
 * (its pending writes are a list it pushes onto the front of): the answer alone does not mean they have read it. Each
 * replica acknowledges a message once it has acted on it, so the announcer learns when every one has.
 * Acknowledgements are matched by message: one left over from an earlier announcement of the same message can count
 * toward the next, which then names the same revocation.
 */
export class Acknowledgements {
  private readonly waiting = new Map<string, Set<Waiter>>();

  /** An acknowledgement heard on the channel. */
  heard(message: string): void {
    for (const waiter of this.waiting.get(message) ?? []) {
      waiter.heard++;
      if (waiter.heard >= waiter.needed) waiter.done();
    }
  }

  /**
   * Publishes `message` (`publish` resolves to the number of subscribers Redis delivered it to) and waits until as
   * many acknowledged it, or `timeoutMs` passed.
   */
  async announce(
    message: string,
    publish: () => Promise<number>,
    timeoutMs = DEFAULT_ACKNOWLEDGEMENT_TIMEOUT_MS,
  ): Promise<Acknowledged> {
    let done!: () => void;
    const settled = new Promise<void>((resolve) => (done = resolve));
    // Waiting before publishing: an acknowledgement may arrive before the publish's answer.
    const waiter: Waiter = { heard: 0, needed: Infinity, done };
    const waiters = this.waiting.get(message) ?? new Set<Waiter>();
    waiters.add(waiter);
    this.waiting.set(message, waiters);
    let timer: NodeJS.Timeout | undefined;
    try {
      const receivers = await publish();
      waiter.needed = receivers;
      if (waiter.heard < receivers) {
        timer = setTimeout(done, timeoutMs);
        await settled;
      }
      return { receivers, acknowledged: Math.min(waiter.heard, receivers) };
    } finally {
      clearTimeout(timer);
      waiters.delete(waiter);
      if (waiters.size === 0) this.waiting.delete(message);
    }
  }
}
