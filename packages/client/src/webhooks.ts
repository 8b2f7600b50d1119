import type { IncomingHttpHeaders } from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

export { WebhookVerificationError };

/** The events of CONTRACT §2a. */
export type WebhookEventType =
  'drive.reported' | 'drive.report_updated' | 'drive.report_withdrawn' | 'drive.deleted' | 'user.deactivated';

/**
 * A delivery's body (Standard Webhooks payload). Drive events carry `drive_id`, `group_id`, `user_id` and `modified`
 * (the time of the change, the same as the feed's: compare it with what you hold before applying).
 */
export interface WebhookEvent {
  type: WebhookEventType;
  /** When it happened (RFC 3339). */
  timestamp: string;
  data: {
    drive_id?: number;
    group_id?: string;
    user_id?: string;
    modified?: string;
    status?: string;
    [key: string]: unknown;
  };
}

export interface VerifiedWebhook {
  /** `webhook-id`: the same for every delivery of one event; deduplicate on it (deliveries are at least once). */
  id: string;
  /** `webhook-timestamp`: when this attempt was signed. */
  signedAt: Date;
  event: WebhookEvent;
}

type HeadersLike = Headers | IncomingHttpHeaders | Record<string, string | string[] | undefined>;

/** The library's own window (5 minutes); `toleranceSeconds` can narrow it. */
export const MAX_WEBHOOK_TOLERANCE_SECONDS = 300;

function header(headers: HeadersLike, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  if (Array.isArray(value)) {
    // Several signature fields are one list (RFC 9110 §5.3); several ids or timestamps are a forgery.
    if (name === 'webhook-signature') return value.join(' ');
    throw new WebhookVerificationError(`more than one ${name} header`);
  }
  return value;
}

/**
 * Verifies a Standard Webhooks delivery (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256
 * of "id.timestamp.body">`) with the `standardwebhooks` library, and returns the parsed event. `rawBody` must be the
 * bytes as received (not re-serialised JSON). Throws WebhookVerificationError when a header is missing, the timestamp
 * is further than `toleranceSeconds` (default and at most 300) from now in either direction, or no signature matches.
 */
export function verifyWebhook(
  secret: string,
  headers: HeadersLike,
  rawBody: string | Buffer,
  options: { toleranceSeconds?: number } = {},
): VerifiedWebhook {
  const tolerance = options.toleranceSeconds ?? MAX_WEBHOOK_TOLERANCE_SECONDS;
  if (!(tolerance >= 0 && tolerance <= MAX_WEBHOOK_TOLERANCE_SECONDS))
    throw new RangeError(`toleranceSeconds must be between 0 and ${MAX_WEBHOOK_TOLERANCE_SECONDS}`);
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signature = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signature) throw new WebhookVerificationError('Missing required headers');
  if (!/^\d{1,12}$/.test(timestamp)) throw new WebhookVerificationError('Invalid Signature Headers');
  const signedAt = Number(timestamp);
  if (Math.abs(Date.now() / 1000 - signedAt) > tolerance)
    throw new WebhookVerificationError('Message timestamp outside the tolerance');
  const event = new Webhook(secret).verify(rawBody, {
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': signature,
  }) as WebhookEvent;
  if (!event || typeof event !== 'object' || typeof event.type !== 'string' || typeof event.data !== 'object')
    throw new WebhookVerificationError('The payload is not a webhook event');
  return { id, signedAt: new Date(signedAt * 1000), event };
}

/** Signs like the platform does (tests and local tools): the three headers for `body`. */
export function signWebhook(secret: string, id: string, body: string, at = new Date()): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': new Webhook(secret).sign(id, new Date(timestamp * 1000), body),
  };
}
