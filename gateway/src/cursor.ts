import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export interface CursorPosition {
  sortTime: string;
  id: number;
  /** Which of several merged lists the id belongs to (ids are unique per list only); absent for a single list. */
  part?: string;
  /**
   * The database's restore epoch the page was read in and when (CONTRACT §8): the service refuses a cursor read after
   * the restore point of a later epoch. Absent on lists without epochs and in cursors made before them.
   */
  epoch?: { id: string; readAt: string };
}

/** What a drive list's cursor is bound to: the route and its subject, and every parameter that shapes the list. */
export function driveListFingerprint(
  scope: Record<string, string | number>,
  list: {
    classification?: string | undefined;
    sortField: string;
    after?: string;
    before?: string;
    includeDeleted?: boolean;
  },
): string {
  return CursorCodec.fingerprint({
    ...scope,
    classification: list.classification,
    sort: list.sortField,
    after: list.after,
    before: list.before,
    // Only when asked for: without include_deleted a cursor is byte for byte what it was before the change feed.
    ...(list.includeDeleted ? { deleted: 1 } : {}),
  });
}

/**
 * Opaque, tamper-evident page cursors: the keyset position of the last row of a page, bound to the query
 * that produced it (route, subject and every filter) and signed with HMAC-SHA256. A cursor edited by hand, or
 * replayed against another query, is refused (422) instead of silently returning the wrong rows.
 *
 * Cursors are signed with the current key; while a key rotates, one signed with the previous key is still accepted
 * (docs/operations.md, "Rotating the cursor secret and the attestation key").
 */
export class CursorCodec {
  private readonly key: Buffer;
  /** Every key a cursor may be signed with: the current one first. */
  private readonly accepted: Buffer[];

  constructor(secret?: string, previousSecret?: string) {
    this.key = secret ? Buffer.from(secret, 'utf8') : randomBytes(32);
    this.accepted = previousSecret ? [this.key, Buffer.from(previousSecret, 'utf8')] : [this.key];
  }

  /** Identifies a query: cursors are valid only for the same fingerprint. */
  static fingerprint(parts: Record<string, string | number | undefined>): string {
    const canonical = JSON.stringify(
      Object.keys(parts)
        .sort()
        .map((k) => [k, parts[k] ?? null]),
    );
    return createHash('sha256').update(canonical).digest('base64url').slice(0, 22);
  }

  encode(position: CursorPosition, fingerprint: string): string {
    const { sortTime: t, id: i, part: p, epoch } = position;
    const body = Buffer.from(
      JSON.stringify({
        v: 1,
        q: fingerprint,
        t,
        i,
        ...(p === undefined ? {} : { p }),
        ...(epoch === undefined ? {} : { e: epoch.id, r: epoch.readAt }),
      }),
    ).toString('base64url');
    return `${body}.${this.sign(this.key, body)}`;
  }

  /** The position, or undefined when the cursor is malformed, forged or from another query. */
  decode(cursor: string, fingerprint: string): CursorPosition | undefined {
    const [body, signature, extra] = cursor.split('.');
    if (!body || !signature || extra !== undefined || cursor.length > 512) return undefined;
    const given = Buffer.from(signature);
    const signedWithAcceptedKey = this.accepted.some((key) => {
      const expected = Buffer.from(this.sign(key, body));
      return expected.length === given.length && timingSafeEqual(expected, given);
    });
    if (!signedWithAcceptedKey) return undefined;
    try {
      const parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as {
        v?: number;
        q?: string;
        t?: string;
        i?: number;
        p?: unknown;
        e?: unknown;
        r?: unknown;
      };
      if (parsed.v !== 1 || parsed.q !== fingerprint || typeof parsed.t !== 'string' || !Number.isSafeInteger(parsed.i))
        return undefined;
      if (Number.isNaN(Date.parse(parsed.t)) || (parsed.p !== undefined && typeof parsed.p !== 'string'))
        return undefined;
      const epoch =
        typeof parsed.e === 'string' && typeof parsed.r === 'string' && !Number.isNaN(Date.parse(parsed.r))
          ? { epoch: { id: parsed.e, readAt: parsed.r } }
          : {};
      return {
        sortTime: parsed.t,
        id: parsed.i!,
        ...(typeof parsed.p === 'string' ? { part: parsed.p } : {}),
        ...epoch,
      };
    } catch {
      return undefined;
    }
  }

  private sign(key: Buffer, body: string): string {
    return createHmac('sha256', key).update(body).digest('base64url');
  }
}
