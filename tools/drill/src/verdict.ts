// What the drill concludes from its ledger of acknowledged writes and what the restored database holds.

/** One write the platform acknowledged, with when the request was sent and when its answer came. */
export interface LedgerEntry {
  kind: 'scim-user' | 'scim-patch' | 'drive' | 'report' | 'review' | 'webhook';
  /** What identifies it in the restored database (an id, or an id and the value it wrote). */
  key: string;
  sentAt: number;
  ackedAt: number;
  /** The server's WAL insert position right after the answer (it covers the write's commit record). */
  lsn: bigint;
}

export interface Judgement {
  /** Acknowledged before T and missing: lost writes. */
  lost: LedgerEntry[];
  /** Sent after T and present: the restore went past its target. */
  resurrected: LedgerEntry[];
  /** Sent before T and answered after it: either outcome is right (the commit fell somewhere in the request). */
  straddling: number;
  before: number;
  after: number;
}

/**
 * Every write acknowledged before the target must be there, none sent after it may be. A write whose request spans the
 * target may be either: its commit happened somewhere between sending and the answer, and only PostgreSQL knows where
 * (that span is the commit skew, measured per write instead of assumed).
 */
export function judge(
  entries: readonly LedgerEntry[],
  target: number,
  present: (e: LedgerEntry) => boolean,
): Judgement {
  const result: Judgement = { lost: [], resurrected: [], straddling: 0, before: 0, after: 0 };
  for (const e of entries) {
    if (e.ackedAt < target) {
      result.before++;
      if (!present(e)) result.lost.push(e);
    } else if (e.sentAt > target) {
      result.after++;
      if (present(e)) result.resurrected.push(e);
    } else result.straddling++;
  }
  return result;
}

/**
 * The recovery point exposure over a run: at each sample, how long the oldest acknowledged write that the archive did
 * not yet hold had been acknowledged (0 when it held them all) — what losing the whole data folder at that moment would
 * have cost. The RPO is the largest.
 */
export class ExposureMeter {
  private worst = 0;
  private samples = 0;

  constructor(private readonly entries: readonly LedgerEntry[]) {}

  /** A sample at `now`, when the archive holds WAL up to `archivedThrough` (the end of its newest segment). */
  sample(now: number, archivedThrough: bigint): number {
    let oldest = Infinity;
    for (const e of this.entries)
      if (e.ackedAt <= now && e.lsn > archivedThrough && e.ackedAt < oldest) oldest = e.ackedAt;
    const exposure = oldest === Infinity ? 0 : now - oldest;
    this.samples++;
    if (exposure > this.worst) this.worst = exposure;
    return exposure;
  }

  get rpoMs(): number {
    return this.worst;
  }

  get sampleCount(): number {
    return this.samples;
  }
}
