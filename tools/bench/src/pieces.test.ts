import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { attributePieces, GARBAGE_COLLECTION, perRequest, piecesReport, UNCLAIMED, type CpuProfile } from './pieces';

const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url },
  children,
});

// root → the HTTP parser → the route → pino (the access log) and the gRPC client → a socket write; plus GC and idle.
const profile: CpuProfile = {
  nodes: [
    frame(1, '(root)', '', [2, 8, 9, 10]),
    frame(2, 'parserOnIncoming', 'node:_http_server', [3]),
    frame(3, 'handler', 'file:///app/gateway/dist/routes/scim.js', [4, 5]),
    frame(4, 'LOG', 'file:///app/node_modules/pino/lib/tools.js'),
    frame(5, 'makeUnaryRequest', 'file:///app/node_modules/@grpc/grpc-js/build/src/client.js', [6]),
    frame(6, 'Socket._writev', 'node:net', [7]),
    frame(7, 'writev', ''),
    frame(8, '(garbage collector)', ''),
    frame(9, '(idle)', ''),
    frame(10, 'processTicksAndRejections', 'node:internal/process/task_queues'),
  ],
  startTime: 1_000_000,
  // One sample every 1 ms (1,000 µs): each lasts until the next.
  samples: [3, 4, 7, 7, 8, 9, 10, 2, 4],
  timeDeltas: [0, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000],
};

test('each busy sample counts for the innermost frame a piece claims, idle for none', () => {
  const pieces = attributePieces(profile, 0, Number.MAX_SAFE_INTEGER);
  assert.deepEqual(Object.fromEntries(pieces), {
    'route and handler': 1,
    'access log': 1,
    // The socket write under the gRPC client is the hop's, not the HTTP server's.
    'gRPC and protobuf': 2,
    [GARBAGE_COLLECTION]: 1,
    [UNCLAIMED]: 1,
    'HTTP server': 1,
    // The last sample has no successor: it lasted an unknown time, counted as none.
  });
});

test('only the samples of the window count', () => {
  // Samples at 1.002 s and 1.003 s: the two socket writes.
  assert.deepEqual(Object.fromEntries(attributePieces(profile, 1_002_000, 1_004_000)), { 'gRPC and protobuf': 2 });
});

test('per request: µs of each piece, largest first', () => {
  assert.deepEqual(
    perRequest(
      new Map([
        ['a', 1],
        ['b', 3],
      ]),
      1000,
    ),
    [
      ['b', 3],
      ['a', 1],
    ],
  );
  assert.deepEqual(perRequest(new Map([['a', 1]]), 0), [['a', 0]]);
});

test('the report: per run, each profiled process with its pieces; a missing profile is an error', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'pieces-'));
  try {
    writeFileSync(path.join(dir, 'gateway.cpuprofile'), JSON.stringify(profile));
    const run = { title: 'GET /x', requests: 1, window: { fromUs: 0, toUs: Number.MAX_SAFE_INTEGER } };
    const lines = piecesReport(dir, ['gateway'], [run]);
    assert.deepEqual(lines.slice(2), [
      'GET /x (1 requests)',
      '  gateway    7000 µs: gRPC and protobuf 2000, route and handler 1000, access log 1000, garbage collection 1000, ' +
        'event loop and Node internals 1000, HTTP server 1000',
    ]);
    assert.throws(() => piecesReport(dir, ['gateway', 'users'], [run]), /no CPU profile of users/);
    assert.throws(
      () => piecesReport(dir, ['gateway'], [{ ...run, window: { fromUs: 0, toUs: 1 } }]),
      /no sample of the run of GET \/x/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
