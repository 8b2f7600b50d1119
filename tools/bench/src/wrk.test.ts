import assert from 'node:assert/strict';
import { test } from 'node:test';
import { childrenCpuMicros, requestLines } from './wrk';

test("wrk's request file: a line per request, its path then its headers, tab-separated", () => {
  assert.equal(
    requestLines({
      requests: [
        { path: '/v1/users/usr_1', headers: { authorization: 'Bearer a.b.c' } },
        {
          path: '/scim/v2/Users?filter=userName%20eq%20%22x%22',
          headers: { authorization: 'Bearer d', accept: '*/*' },
        },
        { path: '/healthz' },
      ],
    }),
    '/v1/users/usr_1\tauthorization: Bearer a.b.c\n' +
      '/scim/v2/Users?filter=userName%20eq%20%22x%22\tauthorization: Bearer d\taccept: */*\n' +
      '/healthz',
  );
});

test('a request the file cannot carry is refused, not sent altered', () => {
  assert.throws(() => requestLines({ requests: [{ path: '/x', headers: { a: 'b\tc' } }] }), /wrk cannot carry/);
});

test("wrk's CPU from the shell's `times`: the children's line, minutes and seconds, user plus system", () => {
  assert.equal(childrenCpuMicros('0m0.010s 0m0.002s\n0m1.250s 0m0.750s\n'), 2_000_000);
  assert.equal(childrenCpuMicros('0m0.00s 0m0.00s\n1m2.5s 0m0.25s'), 62_750_000);
  assert.throws(() => childrenCpuMicros('nothing'), /cannot read wrk's CPU/);
});
