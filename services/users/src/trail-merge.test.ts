import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeTrailParts } from './trail-merge';

const entry = (id: string, at: string, more: object = {}) => `${JSON.stringify({ id, at, ...more })}\n`;

/** A part as the store gives it back: its bytes in chunks of `size`, cut anywhere (inside a line, inside a letter). */
async function* chunked(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function collect(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const line of lines) out.push(line);
  return out;
}

test('the owners’ parts merge oldest first; at one instant the group writes come first, then by number', async () => {
  const users = [
    entry('users-1', '2026-11-01T10:00:00.000100Z', { resource_type: 'User', credential: 'Zoë’s IdP' }),
    entry('users-2', '2026-11-01T10:00:00.000300Z'),
    entry('users-9', '2026-11-01T10:00:00.000300Z'),
    entry('users-4', '2026-11-01T10:00:01.000000Z'),
  ];
  const groups = [
    entry('groups-7', '2026-11-01T09:59:59.999999Z', { members_added: ['Joiner0001'] }),
    entry('groups-3', '2026-11-01T10:00:00.000200Z'),
    entry('groups-5', '2026-11-01T10:00:00.000300Z'),
    entry('groups-6', '2026-11-01T10:00:02.000000Z'),
  ];
  const merged = await collect(mergeTrailParts([chunked(users.join(''), 7), chunked(groups.join(''), 5)]));
  assert.deepEqual(merged, [groups[0], users[0], groups[1], groups[2], users[1], users[2], users[3], groups[3]]);
});

test('one part, or an empty one, is merged as it is', async () => {
  const users = [entry('users-1', '2026-11-01T10:00:00.000000Z'), entry('users-2', '2026-11-01T10:00:00.000000Z')];
  assert.deepEqual(await collect(mergeTrailParts([chunked(users.join(''), 3), chunked('', 1)])), users);
  assert.deepEqual(await collect(mergeTrailParts([])), []);
});

test('each part is read only as far as the merge has got: memory holds a line of each', async () => {
  let pulled = 0;
  async function* counted(owner: string, count: number): AsyncGenerator<Uint8Array> {
    for (let i = 1; i <= count; i++) {
      pulled++;
      yield Buffer.from(entry(`${owner}-${i}`, `2026-11-01T10:00:00.${String(i).padStart(6, '0')}Z`));
    }
  }
  const merged = mergeTrailParts([counted('users', 100_000), counted('groups', 100_000)]);
  let taken = 0;
  for await (const _line of merged) if (++taken === 10) break;
  assert.ok(pulled <= 12, `${pulled} lines were read for 10 merged`);
});

test('a part that is not the trail’s, or ends inside a line, fails the merge', async () => {
  await assert.rejects(
    collect(mergeTrailParts([chunked(entry('drives-1', '2026-11-01T10:00:00.000000Z'), 10)])),
    /not an entry of the provisioning trail/,
  );
  await assert.rejects(collect(mergeTrailParts([chunked('{"id":"users-1"', 4)])), /ends inside a line/);
});
