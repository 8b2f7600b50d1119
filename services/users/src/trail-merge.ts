import { StringDecoder } from 'node:string_decoder';

/**
 * The owners of the provisioning trail in the order their entries of one instant come, oldest first: the order of
 * GET /v1/organization/provisioning-events (newest first, the Users service's entries of an instant first), reversed.
 */
const OWNERS_OLDEST_FIRST = ['groups', 'users'];

/** Where an entry sorts: its exact time (sortable text), its owner's rank, its number in the owner's trail. */
interface SortKey {
  at: string;
  rank: number;
  seq: number;
}

/**
 * Merges the owners' parts of the provisioning trail — each JSON Lines, oldest first in (time, id) order, every entry
 * `{id: "<owner>-<n>", at: <UTC to the microsecond>, …}` (trailOldestFirst) — into one trail, oldest first, a line at
 * a time: each part is read as the merge consumes it, so memory holds one line of each part whatever their size.
 */
export async function* mergeTrailParts(parts: AsyncIterable<Uint8Array>[]): AsyncGenerator<string> {
  const readers = parts.map((part) => linesOf(part)[Symbol.asyncIterator]());
  const heads = await Promise.all(readers.map(nextEntry));
  for (;;) {
    let first = -1;
    for (let i = 0; i < heads.length; i++)
      if (heads[i] && (first < 0 || before(heads[i]!.key, heads[first]!.key))) first = i;
    if (first < 0) return;
    yield heads[first]!.line;
    heads[first] = await nextEntry(readers[first]!);
  }
}

async function nextEntry(lines: AsyncIterator<string>): Promise<{ line: string; key: SortKey } | undefined> {
  const next = await lines.next();
  return next.done ? undefined : { line: next.value, key: sortKey(next.value) };
}

function sortKey(line: string): SortKey {
  const { id, at } = JSON.parse(line) as { id?: unknown; at?: unknown };
  const [, owner, seq] = /^([a-z]+)-(\d+)$/.exec(String(id)) ?? [];
  const rank = OWNERS_OLDEST_FIRST.indexOf(owner ?? '');
  if (typeof at !== 'string' || rank < 0) throw new Error(`not an entry of the provisioning trail: ${line.trim()}`);
  return { at, rank, seq: Number(seq) };
}

const before = (a: SortKey, b: SortKey) =>
  a.at !== b.at ? a.at < b.at : a.rank !== b.rank ? a.rank < b.rank : a.seq < b.seq;

/** The lines of a JSON Lines body, each with its newline, as its chunks arrive. */
async function* linesOf(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  for await (const chunk of body) {
    const text = rest + decoder.write(chunk);
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
      yield text.slice(start, end + 1);
      start = end + 1;
    }
    rest = text.slice(start);
  }
  rest += decoder.end();
  if (rest) throw new Error('a part of the provisioning trail ends inside a line');
}
