/**
 * (+) The change feed through the gateway: `include_deleted=true` on the three drive lists, tombstones in order with
 * live items under one cursor, 422 for what it cannot be combined with, 410 with the resync problem type for a bound
 * older than the retention window, and, without it, responses byte for byte what they were.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { CursorCodec } from '@mileage/gateway';
import { DEMO_ORGANIZATION, startHarness, type Harness } from './harness';

let h: Harness;
let bob: string;
let alice: string;
let app: ReturnType<Harness['app']>;

type Item = Record<string, unknown> & { modified: string };

before(async () => {
  h = await startHarness();
  bob = await h.token('bob@example.com', 'drives_read groups_read_reported_drives');
  alice = await h.token('alice@example.com', 'drives_read groups_read_reported_drives');
  app = h.app({ rateLimitMultiplier: 20 });
});
after(() => h.close());

const get = (path: string, token: string, through = app) =>
  request(through).get(path).set('Authorization', `Bearer ${token}`);

/** Every item of a walk, following next_cursor; the raw bodies too. */
async function walk(path: string, token: string, through = app): Promise<{ items: Item[]; bodies: string[] }> {
  const items: Item[] = [];
  const bodies: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const url: string = cursor ? `${path}&cursor=${encodeURIComponent(cursor)}` : path;
    const res = await get(url, token, through).expect(200);
    bodies.push(res.text);
    items.push(...(res.body.results as Item[]));
    if (!res.body.has_more) return { items, bodies };
    cursor = res.body.next_cursor as string;
  }
  assert.fail('too many pages');
}

/**
 * A walk's bodies with each cursor's read time left out: a cursor carries when its page was read (the restore epoch,
 * CONTRACT §8), which differs between two walks of the same list; everything else must be the same bytes.
 */
const withoutReadTimes = (bodies: string[]) =>
  bodies.map((body) =>
    body.replace(/"next_cursor":"([^".]+)\.[^"]+"/, (_match, encoded: string) => {
      const { r: _readAt, ...position } = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as {
        r?: string;
      };
      return `"next_cursor":${JSON.stringify(position)}`;
    }),
  );

const key = (item: Item) => Number(item.drive_id ?? item.id);
const inOrder = (items: Item[]) =>
  items.every((item, i) => {
    const prev = items[i - 1];
    return !prev || prev.modified > item.modified || (prev.modified === item.modified && key(prev) > key(item));
  });

describe('without include_deleted nothing changes', () => {
  test('bodies and cursors are byte for byte those of the list before the change feed', async () => {
    const queries = [
      '/v1/users/BobDriver1/drives?limit=2',
      '/v1/users/BobDriver1/drives?limit=3&classification=all&filter_by=modified',
      '/v1/users/BobDriver1/drives?limit=2&filter_by=ended&date_after=2026-10-02T00:00:00Z',
    ];
    for (const q of queries) {
      const plain = await walk(q, bob);
      assert.deepEqual(
        withoutReadTimes((await walk(`${q}&include_deleted=false`, bob)).bodies),
        withoutReadTimes(plain.bodies),
        `${q}: include_deleted=false is the default`,
      );
      assert.ok(plain.items.every((item) => !('deleted' in item)));
    }
    // The cursor is bound to the same fingerprint as before include_deleted existed (old cursors keep working).
    const first = await get('/v1/users/BobDriver1/drives?limit=2', bob).expect(200);
    const codec = new CursorCodec('test-cursor-secret-of-at-least-32-chars');
    const last = first.body.results[1] as Item;
    const fingerprint = CursorCodec.fingerprint({
      route: 'user-drives',
      user: 'BobDriver1',
      classification: 'business',
      sort: 'modified',
      after: undefined,
      before: undefined,
    });
    const position = codec.decode(first.body.next_cursor as string, fingerprint);
    assert.deepEqual(
      { sortTime: position?.sortTime, id: position?.id },
      { sortTime: last.modified, id: Number(last.drive_id) },
    );
    assert.ok(position?.epoch, 'the cursor carries the restore epoch its page was read in');
    // A cursor made before restore epochs (none in it) still goes on.
    const old = codec.encode({ sortTime: last.modified, id: Number(last.drive_id) }, fingerprint);
    await get(`/v1/users/BobDriver1/drives?limit=2&cursor=${encodeURIComponent(old)}`, bob).expect(200);
    // A cursor of the plain list does not continue a change-feed walk, nor the other way round.
    const cursor = encodeURIComponent(first.body.next_cursor);
    await get(`/v1/users/BobDriver1/drives?limit=2&include_deleted=true&cursor=${cursor}`, bob).expect(422);
  });
});

describe('include_deleted=true', () => {
  test('parameters: booleans as FastAPI reads them; only with the order by modified time', async () => {
    for (const word of ['true', 'True', '1', 'yes', 'on', 'false', '0', 'off'])
      await get(`/v1/users/BobDriver1/drives?include_deleted=${word}`, bob).expect(200);
    const bad = await get('/v1/users/BobDriver1/drives?include_deleted=maybe', bob).expect(422);
    assert.deepEqual(bad.body.detail, [
      {
        loc: ['query', 'include_deleted'],
        msg: 'Input should be a valid boolean, unable to interpret input',
        type: 'bool_parsing',
      },
    ]);
    for (const path of ['/v1/users/BobDriver1/drives', `/v1/groups/${h.groups.demo}/reported-drives`, '/v1/drives']) {
      const ended = await get(`${path}?include_deleted=true&filter_by=ended`, alice).expect(422);
      assert.deepEqual(
        ended.body.detail.map((d: { loc: string[] }) => d.loc),
        [['query', 'include_deleted']],
        path,
      );
    }
    await get('/v1/users/BobDriver1/drives?include_deleted=true&filter_by=modified', bob).expect(200);
    await get('/v1/users/BobDriver1/drives?include_deleted=1&modified_after=2026-11-01T00:00:00Z', bob).expect(200);
  });

  test('a deleted drive and a withdrawn report are tombstones in order with live items, once, across pages', async () => {
    const [reportedThenDeleted, withdrawn] = [h.drives.reportedDemo[2]!, h.drives.reportedDemo[3]!];
    const personal = h.drives.bobPersonal[0]!;
    const before = await walk('/v1/users/BobDriver1/drives?limit=100&include_deleted=true', bob);
    const watermark = before.items[0]!.modified;
    await h.drivesClient.deleteDrive(
      { driveId: reportedThenDeleted, userId: 'BobDriver1' },
      { organizationId: DEMO_ORGANIZATION },
    );
    await h.drivesClient.deleteDrive(
      { driveId: personal, userId: 'BobDriver1' },
      { organizationId: DEMO_ORGANIZATION },
    );
    await h.drivesClient.withdrawReport(
      { driveId: withdrawn, userId: 'BobDriver1' },
      { organizationId: DEMO_ORGANIZATION },
    );

    const mine = await walk('/v1/users/BobDriver1/drives?limit=2&include_deleted=true', bob);
    assert.ok(inOrder(mine.items), 'modified desc, then id desc');
    const tombstones = mine.items.filter((item) => item.deleted === true);
    assert.deepEqual(
      tombstones.map((t) => Object.keys(t).sort()),
      [
        ['deleted', 'drive_id', 'modified'],
        ['deleted', 'drive_id', 'modified'],
      ],
    );
    assert.deepEqual(tombstones.map((t) => t.drive_id).sort(), [reportedThenDeleted, personal].sort());
    assert.deepEqual(
      mine.items.map(key).sort((a, b) => a - b),
      [...h.drives.bobBusiness.filter((id) => id !== reportedThenDeleted), reportedThenDeleted, personal].sort(
        (a, b) => a - b,
      ),
      'each drive once; the deleted personal drive too, whatever the classification filter',
    );
    const plain = await walk('/v1/users/BobDriver1/drives?limit=2', bob);
    assert.deepEqual(
      plain.items,
      mine.items.filter((item) => item.deleted !== true),
      'the live items are those of the list without include_deleted',
    );
    // An incremental sync from the watermark: the two deletions and nothing else of Bob's changed.
    const since = await walk(
      `/v1/users/BobDriver1/drives?include_deleted=true&filter_by=modified&date_after=${watermark}`,
      bob,
    );
    assert.deepEqual(since.items.map(key).sort(), [reportedThenDeleted, personal].sort());

    const group = await walk(`/v1/groups/${h.groups.demo}/reported-drives?limit=2&include_deleted=true`, alice);
    assert.ok(inOrder(group.items));
    const groupTombstones = group.items.filter((item) => item.deleted === true);
    assert.deepEqual(
      groupTombstones.map((t) => [Object.keys(t).sort().join(), t.id]).sort(),
      [
        ['deleted,id,modified', String(reportedThenDeleted)],
        ['deleted,id,modified', String(withdrawn)],
      ].sort(),
    );
    assert.equal(group.items.length, h.drives.reportedDemo.length, 'every report once, live or tombstone');
    const all = await walk('/v1/drives?limit=3&include_deleted=true', alice);
    assert.deepEqual(all.items, group.items, 'Alice administers one group: /v1/drives lists the same');
    const plainGroup = await walk(`/v1/groups/${h.groups.demo}/reported-drives?limit=2`, alice);
    assert.deepEqual(
      plainGroup.items,
      group.items.filter((item) => item.deleted !== true),
    );

    // The Drives service renders the pages; one released before that answers objects, which the gateway renders
    // with the same functions. Every page, tombstones and cursors included, is the same bytes either way.
    const older = h.app({ rateLimitMultiplier: 20, drivesAddress: h.olderDrivesAddress });
    for (const [path, token] of [
      ['/v1/users/BobDriver1/drives?limit=2&include_deleted=true', bob],
      ['/v1/users/BobDriver1/drives?limit=100&classification=all', bob],
      [`/v1/groups/${h.groups.demo}/reported-drives?limit=2&include_deleted=true`, alice],
      [`/v1/groups/${h.groups.demo}/reported-drives?limit=100`, alice],
      ['/v1/drives?limit=3&include_deleted=true', alice],
    ] as const) {
      const rendered = await walk(path, token);
      assert.ok(rendered.items.length > 0, path);
      assert.deepEqual(
        withoutReadTimes((await walk(path, token, older)).bodies),
        withoutReadTimes(rendered.bodies),
        path,
      );
    }
  });

  test('a bound older than the retention window is 410 with the resync problem type; without the feed, 200', async () => {
    const old = new Date(Date.now() - 91 * 86_400_000).toISOString();
    for (const path of [
      `/v1/users/BobDriver1/drives?include_deleted=true&filter_by=modified&date_after=${old}`,
      `/v1/users/BobDriver1/drives?include_deleted=true&modified_after=${old}`,
      `/v1/groups/${h.groups.demo}/reported-drives?include_deleted=true&filter_by=modified&date_after=${old}`,
      `/v1/drives?include_deleted=true&filter_by=modified&date_after=${old}`,
    ]) {
      const token = path.startsWith('/v1/users') ? bob : alice;
      const res = await get(path, token).expect(410);
      assert.equal(res.body.type, '/errors/resync-required', path);
      assert.equal(res.body.title, 'Gone');
      assert.equal(res.body.status, 410);
      assert.match(res.body.detail, /full sync/);
      assert.ok(res.headers['x-ratelimit-limit'], 'rate-limit headers as on every answer');
      await get(path.replace('include_deleted=true', 'include_deleted=false'), token).expect(200);
    }
    // The check order holds: a caller who may not read the group is 403 first.
    await get(
      `/v1/groups/${h.groups.demo}/reported-drives?include_deleted=true&filter_by=modified&date_after=${old}`,
      bob,
    ).expect(403);
    const explained = await request(app)
      .get('/errors/resync-required')
      .expect(200)
      .expect('Content-Type', /text\/plain/);
    assert.match(explained.text, /Start a full sync/);
  });
});
