import type { scimAuditV1, usersV1 } from '@mileage/proto';
import type { WireTimestamp } from '@mileage/runtime/formats';
import type { Request } from 'express';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CursorCodec } from '../cursor';
import { HttpProblem } from '../problems';
import type { Account, V1Deps } from '../v1';
import { listProvisioningEvents, validateScimTokenBody } from './organization';

const at = (seconds: number, nanos = 0): WireTimestamp => ({ seconds: 1_795_000_000 + seconds, nanos });
const event = (id: number, time: WireTimestamp): scimAuditV1.ProvisioningEvent => ({
  id,
  time,
  actor: 'mileage-scim',
  action: 'patch',
  resourceType: 'User',
  resourceId: `User${id}`,
  requestId: `req-${id}`,
});

/** An owner's trail as ListProvisioningEvents pages it: (time, id) descending, strictly before the keyset. */
function owner(events: scimAuditV1.ProvisioningEvent[], calls: unknown[]) {
  const key = (e: { time?: WireTimestamp | undefined; id: number }) => [e.time!.seconds, e.time!.nanos, e.id];
  const older = (a: number[], b: number[]) => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
  return {
    listProvisioningEvents: async (
      req: { limit: number; beforeTime?: WireTimestamp; beforeId: number },
      call: unknown,
    ) => {
      calls.push(call);
      const sorted = [...events].sort((a, b) => older(key(b), key(a)));
      const bound = req.beforeTime && key({ time: req.beforeTime, id: req.beforeId });
      const rest = bound ? sorted.filter((e) => older(key(e), bound) < 0) : sorted;
      return { events: rest.slice(0, req.limit), hasMore: rest.length > req.limit };
    },
  };
}

const account = (organizationAdmin: boolean): Account => ({
  caller: { subject: 's', userId: 'ErinAdmin1', scopes: new Set(['organization_manage']), expiresAt: 0 },
  user: { id: 'ErinAdmin1', organizationId: 2, organizationAdmin } as usersV1.User,
});

describe('GET /v1/organization/provisioning-events', () => {
  // Ties on purpose: the same instant in both owners and twice in one, and a nanosecond apart.
  const userEvents = [event(1, at(1)), event(2, at(5)), event(3, at(5)), event(4, at(7, 1)), event(5, at(9))];
  const groupEvents = [event(1, at(5)), event(2, at(7)), event(3, at(9)), event(4, at(2))];
  const expected = [
    'users-5',
    'groups-3',
    'users-4',
    'groups-2',
    'users-3',
    'users-2',
    'groups-1',
    'groups-4',
    'users-1',
  ];

  function deps(calls: unknown[]) {
    return {
      users: owner(userEvents, calls),
      groups: owner(groupEvents, calls),
      cursors: new CursorCodec('a-cursor-secret-of-at-least-32-characters'),
    } as unknown as V1Deps;
  }
  const page = async (d: V1Deps, query: Record<string, string>) => {
    const req = { query, params: {} } as unknown as Request;
    const parsed = listProvisioningEvents.validate(req, { deps: d, caller: account(true).caller });
    if ('issues' in parsed) return { issues: parsed.issues };
    const call = { requestId: 'r', organizationId: 2 };
    return (await listProvisioningEvents.handle(parsed.input, account(true), d, call)) as {
      results: { id: string; at: string; outcome: string }[];
      has_more: boolean;
      next_cursor: string | null;
    };
  };

  test('newest first across both owners, every event once, at every page size', async () => {
    for (const limit of [1, 2, 3, 4, 9, 10]) {
      const calls: unknown[] = [];
      const d = deps(calls);
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 20; pages++) {
        const body = await page(d, { limit: String(limit), ...(cursor ? { cursor } : {}) });
        assert.ok(!('issues' in body));
        seen.push(...body.results.map((r) => r.id));
        assert.ok(body.results.length <= limit);
        cursor = body.next_cursor;
        assert.equal(body.has_more, cursor !== null);
        if (!cursor) break;
      }
      assert.deepEqual(seen, expected, `limit ${limit}`);
      assert.ok(
        calls.every((c) => (c as { organizationId?: number }).organizationId === 2),
        'owners asked inside the organization',
      );
    }
  });

  test('a forged or foreign cursor and a bad limit are 422', async () => {
    const d = deps([]);
    const other = new CursorCodec('another-cursor-secret-of-32-characters!').encode(
      { sortTime: '2026-11-25T12:00:00.000000000Z', id: 1, part: 'users' },
      CursorCodec.fingerprint({ route: 'organization.provisioning-events', user: 'ErinAdmin1' }),
    );
    const queries: Record<string, string>[] = [{ cursor: 'abc' }, { cursor: other }, { limit: '0' }, { limit: '1001' }];
    for (const query of queries) {
      const body = await page(d, query);
      assert.ok('issues' in body, JSON.stringify(query));
    }
  });

  test('a caller who is not an organization admin: 403 before any owner is asked', async () => {
    const calls: unknown[] = [];
    await assert.rejects(
      listProvisioningEvents.handle({ limit: 10 }, account(false), deps(calls), { requestId: 'r' }),
      (err: unknown) => err instanceof HttpProblem && err.status === 403,
    );
    assert.equal(calls.length, 0);
  });
});

describe('POST /v1/organization/scim-tokens body', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');

  test('a name, and an optional expiry in the future', () => {
    assert.deepEqual(validateScimTokenBody({ name: 'Entra ID' }, now), { name: 'Entra ID', expiresAt: undefined });
    assert.deepEqual(validateScimTokenBody({ name: 'Okta', expires_at: null }, now), {
      name: 'Okta',
      expiresAt: undefined,
    });
    assert.deepEqual(validateScimTokenBody({ name: 'Okta', expires_at: '2027-01-01T00:00:00+01:00' }, now), {
      name: 'Okta',
      expiresAt: new Date('2026-12-31T23:00:00Z'),
    });
  });

  test('every bad field is named, in the FastAPI shape', () => {
    const locs = (body: unknown) => (validateScimTokenBody(body, now) as { loc: unknown[] }[]).map((i) => i.loc);
    assert.deepEqual(locs([]), [['body']]);
    assert.deepEqual(locs({}), [['body', 'name']]);
    assert.deepEqual(locs({ name: '   ' }), [['body', 'name']]);
    assert.deepEqual(locs({ name: 'x'.repeat(201) }), [['body', 'name']]);
    assert.deepEqual(locs({ name: 7, expires_at: '2026-11-25T11:59:59Z' }), [
      ['body', 'name'],
      ['body', 'expires_at'],
    ]);
    assert.deepEqual(locs({ name: 'a', expires_at: '2026-02-30T00:00:00Z' }), [['body', 'expires_at']]);
    assert.deepEqual(locs({ name: 'a', expires_at: 1_900_000_000 }), [['body', 'expires_at']]);
  });
});
