// The latency breakdown of a traced request from its span tree, and the medians over requests.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { breakdownTrace, IncompleteTrace, median, percentile, summarise, type Row } from './breakdown';
import { SPAN_KIND, type SpanRecord } from './otlp-decode';

let nextId = 0;
/** A span of trace "t"; times in ms on the named process's own clock. */
function span(
  service: string,
  name: string,
  kind: number,
  startMs: number,
  endMs: number,
  parent?: SpanRecord,
  attributes: SpanRecord['attributes'] = {},
): SpanRecord {
  return {
    traceId: 't',
    spanId: String(++nextId),
    parentSpanId: parent?.spanId ?? 'client',
    name,
    kind,
    service,
    startMs,
    endMs,
    attributes,
  };
}
const grpc = { 'rpc.system': 'grpc' };
const sql = { 'db.system.name': 'postgresql' };
const call = (from: string, method: string, start: number, end: number, parent: SpanRecord) =>
  span(from, `svc/${method}`, SPAN_KIND.client, start, end, parent, { ...grpc, 'rpc.method': method });

const parts = (rows: Row[]) => Object.fromEntries(rows.filter((r) => r.role === 'part').map((r) => [r.label, r.ms]));
const sumOfParts = (rows: Row[]) => rows.filter((r) => r.role === 'part').reduce((a, r) => a + r.ms, 0);
const close = (actual: Record<string, number>, expected: Record<string, number>) => {
  assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort());
  for (const k of Object.keys(expected)) assert.ok(Math.abs(actual[k]! - expected[k]!) < 1e-9, `${k}: ${actual[k]}`);
};

/** GET /v1/users/{id}: gateway → Users GetUser → one SELECT. The Users process's clock is 1 s off the gateway's. */
function userRequest() {
  const root = span('gateway', 'GET', SPAN_KIND.server, 100, 104.8);
  const client = call('gateway', 'GetUser', 100.5, 104.5, root);
  const server = span('users', 'users.v1.UsersService/GetUser', SPAN_KIND.server, 1101, 1102.5, client);
  const select = span('users', 'SELECT users', SPAN_KIND.client, 1101.6, 1102.1, server, sql);
  return [select, client, root, server];
}

describe('the breakdown of one traced request', () => {
  it('splits the client total into parts that add up to it, by durations across processes', () => {
    const rows = breakdownTrace(userRequest(), 5.2);
    close(parts(rows), {
      'client ↔ gateway: outside the gateway server span': 0.4,
      'gateway outside its child spans': 0.8,
      'hop gateway → users: client span − server span': 2.5,
      'users outside its child spans': 1.0,
      'SQL SELECT users': 0.5,
    });
    assert.ok(Math.abs(sumOfParts(rows) - 5.2) < 1e-9);
    assert.deepEqual(
      rows.map((r) => `${r.depth} ${r.role} ${r.label}`),
      [
        '0 span client total',
        '1 part client ↔ gateway: outside the gateway server span',
        '1 span gateway server span GET',
        '2 part gateway outside its child spans',
        '2 span gateway → users GetUser: client span',
        '3 part hop gateway → users: client span − server span',
        '3 span users server span users.v1.UsersService/GetUser',
        '4 part users outside its child spans',
        '4 part SQL SELECT users',
      ],
    );
  });

  it('follows the call that ended last among calls sent at once, and lists the other beside', () => {
    const root = span('gateway', 'GET', SPAN_KIND.server, 0, 10);
    const groups = call('gateway', 'GetGroup', 1, 4, root);
    const drives = call('gateway', 'ListReportedDrives', 1.2, 6, root);
    const users = call('gateway', 'BatchGetUsers', 6.5, 9, root);
    const spans = [
      root,
      groups,
      drives,
      users,
      span('groups', 'GetGroup', SPAN_KIND.server, 50, 52, groups),
      span('drives', 'ListReportedDrives', SPAN_KIND.server, 70, 74, drives),
      span('users', 'BatchGetUsers', SPAN_KIND.server, 90, 91, users),
    ];
    const rows = breakdownTrace(spans, 10.5);
    close(parts(rows), {
      'client ↔ gateway: outside the gateway server span': 0.5,
      // 10 ms less the 1…6 ms of the two calls at once and the 6.5…9 ms of the third.
      'gateway outside its child spans': 2.5,
      // The 0.2 ms between the first call's start and that of the one it waited for longest.
      'gateway in calls at once, before the last to end began': 0.2,
      'hop gateway → drives: client span − server span': 0.8,
      'drives outside its child spans': 4,
      'hop gateway → users: client span − server span': 1.5,
      'users outside its child spans': 1,
    });
    assert.ok(Math.abs(sumOfParts(rows) - 10.5) < 1e-9);
    const beside = rows.filter((r) => r.role === 'beside');
    assert.deepEqual(
      beside.map((r) => [r.label, r.ms]),
      [['∥ gateway GetGroup', 3]],
    );
  });

  it('follows a nested call (SCIM → Users) and sums a statement run twice', () => {
    const root = span('gateway', 'GET', SPAN_KIND.server, 0, 6);
    const toScim = call('gateway', 'ListUsers', 1, 5.5, root);
    const scim = span('scim', 'ListUsers', SPAN_KIND.server, 21, 24, toScim);
    const toUsers = call('scim', 'FindUsers', 21.5, 23.5, scim);
    const users = span('users', 'FindUsers', SPAN_KIND.server, 40, 41.5, toUsers);
    const first = span('users', 'SELECT users', SPAN_KIND.client, 40.1, 40.5, users, sql);
    const second = span('users', 'SELECT users', SPAN_KIND.client, 40.6, 41.2, users, sql);
    const rows = breakdownTrace([root, toScim, scim, toUsers, users, first, second], 6);
    close(parts(rows), {
      'client ↔ gateway: outside the gateway server span': 0,
      'gateway outside its child spans': 1.5,
      'hop gateway → scim: client span − server span': 1.5,
      'scim outside its child spans': 1,
      'hop scim → users: client span − server span': 0.5,
      'users outside its child spans': 0.5,
      'SQL SELECT users': 1,
    });
    assert.equal(rows.find((r) => r.label === 'SQL SELECT users')!.calls, 2);
  });

  it('takes calls one after another whose whole-ms starts overlap by less than 1 ms as sequential', () => {
    // As the SDK records them: starts in whole ms (Date.now()), ends at start + the precise duration. The second
    // call really began at 102.5, after the first ended at 102.4.
    const root = span('gateway', 'GET', SPAN_KIND.server, 100, 105);
    const first = call('gateway', 'GetUser', 100, 102.4, root);
    const second = call('gateway', 'ListUserDrives', 102, 104, root);
    const spans = [
      root,
      first,
      second,
      span('users', 'GetUser', SPAN_KIND.server, 7, 8.9, first),
      span('drives', 'ListUserDrives', SPAN_KIND.server, 9, 10.5, second),
    ];
    const rows = breakdownTrace(spans, 5.5);
    assert.ok(Math.abs(parts(rows)['gateway outside its child spans']! - 0.6) < 1e-9);
    assert.deepEqual(
      rows.filter((r) => r.role === 'beside'),
      [],
    );
    assert.ok(Math.abs(sumOfParts(rows) - 5.5) < 1e-9);
  });

  it("takes a retried call's last attempt as the answered one", () => {
    const root = span('gateway', 'GET', SPAN_KIND.server, 0, 10);
    const c = call('gateway', 'GetUser', 1, 9, root);
    const first = span('users', 'GetUser', SPAN_KIND.server, 100, 100.5, c);
    const second = span('users', 'GetUser', SPAN_KIND.server, 103, 106, c);
    const rows = breakdownTrace([root, c, second, first], 10);
    assert.equal(parts(rows)['hop gateway → users: client span − server span'], 5);
  });

  it('refuses a trace with a call whose server span is missing, or without a single server root', () => {
    const [select, client, root] = userRequest();
    assert.throws(() => breakdownTrace([select!, client!, root!], 5), IncompleteTrace);
    assert.throws(() => breakdownTrace([], 5), IncompleteTrace);
    const orphan = { ...userRequest()[3]!, parentSpanId: 'elsewhere' };
    assert.throws(() => breakdownTrace([...userRequest().slice(0, 3), orphan], 5), IncompleteTrace);
  });
});

describe('the breakdown over many requests', () => {
  it('gives each row its median and mean, a missing row counting as 0, in tree order', () => {
    const row = (parent: string, label: string, depth: number, ms: number): Row => ({
      key: `${parent}/${label}`,
      parent,
      label,
      depth,
      ms,
      role: 'part',
      calls: 1,
    });
    const a = [row('', 'total', 0, 3), row('/total', 'x', 1, 1), row('/total', 'y', 1, 2)];
    const b = [row('', 'total', 0, 5), row('/total', 'x', 1, 2), row('/total/x', 'x1', 2, 1), row('/total', 'y', 1, 2)];
    const c = [row('', 'total', 0, 4), row('/total', 'x', 1, 3), row('/total', 'y', 1, 1)];
    const s = summarise([a, b, c]);
    assert.deepEqual(
      s.map((r) => [r.label, r.medianMs, r.meanMs, r.present]),
      [
        ['total', 4, 4, 3],
        ['x', 2, 2, 3],
        ['x1', 0, 1 / 3, 1],
        ['y', 2, 5 / 3, 3],
      ],
    );
  });

  it('takes medians and nearest-rank percentiles', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 2, 3]), 2.5);
    assert.ok(Number.isNaN(median([])));
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    assert.equal(percentile(hundred, 99), 99);
    assert.equal(percentile(hundred, 50), 50);
    assert.equal(percentile([7], 99), 7);
  });
});
