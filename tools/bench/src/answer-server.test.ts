import { isWarningOrWorse } from '@mileage/runtime';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { answerRequests, logFailure, Refused } from './answer-server';

/** Serves `listener` on a free loopback port for one test, and returns GET of a path there (status and body). */
async function serving(
  listener: http.RequestListener,
): Promise<{ get(path: string): Promise<[number, string]>; close(): Promise<void> }> {
  const server = http.createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    get: async (path) => {
      const res = await fetch(base + path);
      return [res.status, await res.text()];
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

test('a route that fails answers 500 and is reported with its URL; a refusal answers its status, unreported', async () => {
  const reported: Array<[string, string | undefined]> = [];
  const server = await serving(
    answerRequests(
      (req) => {
        if (req.url === '/ok') return Promise.resolve('{"a":1}');
        if (req.url === '/refused') return Promise.reject(new Refused(403));
        if (req.url === '/broken') return Promise.reject(new Error('14 UNAVAILABLE: Connection dropped'));
        return undefined;
      },
      (err, req) => reported.push([(err as Error).message, req.url]),
    ),
  );
  try {
    assert.deepEqual(await server.get('/ok'), [200, '{"a":1}']);
    assert.deepEqual(await server.get('/refused'), [403, '']);
    assert.deepEqual(await server.get('/unknown'), [404, '']);
    assert.deepEqual(await server.get('/broken'), [500, '']);
    assert.deepEqual(reported, [['14 UNAVAILABLE: Connection dropped', '/broken']]);
  } finally {
    await server.close();
  }
});

test("the default report is one error line the bench keeps among the servers' warnings", (t) => {
  const lines: string[] = [];
  t.mock.method(process.stdout, 'write', (chunk: string) => lines.push(chunk) > 0);
  logFailure(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded'), { url: '/v1/users/a' } as http.IncomingMessage);
  t.mock.restoreAll();
  assert.equal(lines.length, 1);
  assert.ok(isWarningOrWorse(lines[0]!.trimEnd()), lines[0]);
  const { level, url, err, msg } = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.deepEqual(
    { level, url, err, msg },
    {
      level: 'error',
      url: '/v1/users/a',
      err: '4 DEADLINE_EXCEEDED: Deadline exceeded',
      msg: 'request failed',
    },
  );
});
