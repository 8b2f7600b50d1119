// The bench's verdict: each check with figures that meet it and figures that miss it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  answersDiffer,
  exitStatus,
  expectedWalkDrives,
  failedRequests,
  oneConnectionChecks,
  organizationChecks,
  ratios,
  routeChecks,
  rssWithinTarget,
  summariseChecks,
  walkProblem,
} from './verdict';

const figures = (requestsPerSecond: number, p99Ms: number, cpuMicrosPerRequest: number) => ({
  requestsPerSecond,
  p99Ms,
  cpuMicrosPerRequest,
});

describe('route targets', () => {
  it("passes a full path within half the throughput, 3× the p99 and its kind of route's CPU ratio", () => {
    const page = ratios(figures(1000, 10, 100), figures(500, 30, 200));
    assert.deepEqual(page, { throughput: 0.5, p99: 3, cpu: 2 });
    assert.deepEqual(routeChecks('user-drives', 'page', page), {
      'user-drives throughput': true,
      'user-drives p99': true,
      'user-drives cpu': true,
    });
    assert.equal(routeChecks('user', 'route', ratios(figures(1, 1, 100), figures(1, 1, 250)))['user cpu'], true);
    assert.equal(routeChecks('scim', 'scim', ratios(figures(1, 1, 100), figures(1, 1, 300)))['scim cpu'], true);
  });

  it('fails each target the full path misses; CPU at 2× on drive pages, 2.5× on a route, 3× on the SCIM lookup', () => {
    const r = ratios(figures(1000, 10, 100), figures(499, 31, 201));
    assert.deepEqual(routeChecks('user-drives', 'page', r), {
      'user-drives throughput': false,
      'user-drives p99': false,
      'user-drives cpu': false,
    });
    assert.deepEqual(routeChecks('user', 'route', r), {
      'user throughput': false,
      'user p99': false,
      'user cpu': true,
    });
    assert.equal(routeChecks('user', 'route', ratios(figures(1, 1, 100), figures(1, 1, 251)))['user cpu'], false);
    assert.equal(routeChecks('scim', 'scim', ratios(figures(1, 1, 100), figures(1, 1, 251)))['scim cpu'], true);
    assert.equal(routeChecks('scim', 'scim', ratios(figures(1, 1, 100), figures(1, 1, 301)))['scim cpu'], false);
  });

  it('takes a sub-millisecond bare p99 as 1 ms', () => {
    assert.equal(ratios(figures(1, 0.2, 1), figures(1, 3, 1)).p99, 3);
    assert.equal(routeChecks('x', 'route', ratios(figures(1, 0.2, 1), figures(1, 3.5, 1)))['x p99'], false);
  });
});

describe('byte-identical answers', () => {
  it('accepts two 200s with the same body', () => {
    assert.equal(answersDiffer({ status: 200, body: '{"a":1}' }, { status: 200, body: '{"a":1}' }), undefined);
  });

  it('names the first differing byte', () => {
    const said = answersDiffer({ status: 200, body: '{"a":1,"b":2}' }, { status: 200, body: '{"a":1,"b":3}' });
    assert.match(said ?? '', /^bodies differ at 11\n {2}full: …\{"a":1,"b":2\}…\n {2}bare: …\{"a":1,"b":3\}…$/);
  });

  it('accepts cursors that differ only in when their page was read, not in where it goes on', () => {
    const cursor = (position: object) => `${Buffer.from(JSON.stringify(position)).toString('base64url')}.sig`;
    const body = (position: object) => `{"results":[],"next_cursor":"${cursor(position)}"}`;
    const at = { v: 1, q: 'fp', t: '2026-09-17T10:47:14.309Z', i: 7601, e: '77.1' };
    const read = (r: string) => body({ ...at, r });
    assert.equal(
      answersDiffer({ status: 200, body: read('2026-11-28T23:39:29Z') }, { status: 200, body: read('x') }),
      undefined,
    );
    assert.match(
      answersDiffer({ status: 200, body: body({ ...at, i: 7602, r: 'a' }) }, { status: 200, body: read('a') }) ?? '',
      /bodies differ/,
    );
    const otherEpoch = body({ ...at, e: '78.2', r: 'a' });
    assert.match(
      answersDiffer({ status: 200, body: otherEpoch }, { status: 200, body: read('a') }) ?? '',
      /bodies differ/,
    );
  });

  it('refuses a body that is a prefix of the other', () => {
    assert.match(answersDiffer({ status: 200, body: 'abc' }, { status: 200, body: 'ab' }) ?? '', /differ at 2/);
  });

  it('refuses equal bodies when either answer is not 200', () => {
    assert.equal(answersDiffer({ status: 404, body: 'x' }, { status: 404, body: 'x' }), 'full path 404, bare 404: x');
    assert.match(answersDiffer({ status: 200, body: 'x' }, { status: 500, body: 'x' }) ?? '', /bare 500/);
  });
});

describe('sync walks', () => {
  it('expects the whole list when walked to its end, the bound pages from a deep cursor, else nothing', () => {
    const walk = { last: false, maxPages: 0, limit: 100, pages: 20, reported: 1950 };
    assert.equal(expectedWalkDrives(walk), 1950);
    assert.equal(expectedWalkDrives({ ...walk, maxPages: 50 }), 1950, 'fewer pages than the bound: the end');
    assert.equal(expectedWalkDrives({ ...walk, maxPages: 5, pages: 5 }), 0, 'stopped at the bound: unknown');
    assert.equal(expectedWalkDrives({ ...walk, last: true, maxPages: 5, pages: 5 }), 500);
  });

  it('passes equal pages with the expected count and fails either difference', () => {
    const bare = { pageHashes: ['a', 'b'] };
    assert.equal(walkProblem(bare, { pageHashes: ['a', 'b'], drives: 150 }, 150), undefined);
    assert.equal(walkProblem(bare, { pageHashes: ['a', 'b'], drives: 150 }, 0), undefined);
    assert.equal(
      walkProblem(bare, { pageHashes: ['a', 'b'], drives: 150 }, 150, { pageHashes: ['a', 'b'] }),
      undefined,
    );
    assert.match(
      walkProblem(bare, { pageHashes: ['a', 'b'], drives: 150 }, 150, { pageHashes: ['a', 'c'] }) ?? '',
      /the floor and the bare server returned different pages/,
    );
    assert.equal(
      walkProblem(bare, { pageHashes: ['a', 'c'], drives: 150 }, 150),
      'the full path and the bare server returned different pages',
    );
    assert.equal(
      walkProblem(bare, { pageHashes: ['a', 'b', 'c'], drives: 150 }, 150),
      'the full path and the bare server returned different pages',
    );
    assert.equal(walkProblem(bare, { pageHashes: ['a', 'b'], drives: 149 }, 150), '149 drives, expected 150');
  });
});

describe('failures and the exit status', () => {
  it('counts non-2xx answers and errors', () => {
    assert.equal(failedRequests({ non2xx: 0, errors: 0 }), 0);
    assert.equal(failedRequests({ non2xx: 2, errors: 1 }), 3);
  });

  it('fails on any failed request; on missed targets only with --strict', () => {
    assert.equal(exitStatus(0, 0, true), 0);
    assert.equal(exitStatus(1, 0, false), 1);
    assert.equal(exitStatus(0, 2, false), 0);
    assert.equal(exitStatus(0, 2, true), 1);
  });

  it('summarises the checks met and names the missed ones', () => {
    assert.deepEqual(summariseChecks({ a: true, b: true }), { line: 'Targets: 2 of 2 met', missed: [] });
    assert.deepEqual(summariseChecks({ a: true, b: false, c: false }), {
      line: 'Targets: 1 of 3 met; missed: b, c',
      missed: ['b', 'c'],
    });
  });
});

describe('resident memory after the soak', () => {
  it('allows 1.5× idle for every process but the bare server', () => {
    assert.equal(rssWithinTarget({ gateway: 100, bare: 50 }, { gateway: 150, bare: 500 }), true);
    assert.equal(rssWithinTarget({ gateway: 100, users: 80 }, { gateway: 150, users: 121 }), false);
  });

  it('fails a process with no reading after', () => {
    assert.equal(rssWithinTarget({ gateway: 100 }, {}), false);
  });
});

describe('the SCIM lookup among many organizations', () => {
  const one = { requestsPerSecond: 1000, p99Ms: 10, cpuMicrosPerRequest: 1000 };
  it('holds within 10 % of the single organization', () => {
    const checks = organizationChecks(ratios(one, { requestsPerSecond: 905, p99Ms: 11, cpuMicrosPerRequest: 1100 }));
    assert.deepEqual(Object.values(checks), [true, true, true]);
  });

  it('misses each figure that moved more', () => {
    const checks = organizationChecks(ratios(one, { requestsPerSecond: 850, p99Ms: 12, cpuMicrosPerRequest: 1200 }));
    assert.deepEqual(checks, {
      'scim-lookup organizations throughput': false,
      'scim-lookup organizations p99': false,
      'scim-lookup organizations cpu': false,
    });
  });
});

describe('one connection', () => {
  it("meets the target up to 1 ms above the bare server's p50, and misses it beyond", () => {
    assert.deepEqual(oneConnectionChecks('user', 0.3, 1.3), { 'user one-connection p50': true });
    assert.deepEqual(oneConnectionChecks('user', 0.3, 1.31), { 'user one-connection p50': false });
  });
});
