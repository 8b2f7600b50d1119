// waitUntilReady and httpReady: a stack process that does not get ready says what its probe last saw.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import type { Logger } from '@mileage/runtime/telemetry';
import { failureOf, httpReady, startProcess, stopProcess, waitUntilReady } from './processes';

const quiet = { info: () => {} } as unknown as Logger;

/** A server answering every request with `status` and `body`, on a loopback port of its own. */
async function answering(status: number, body: string): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => res.writeHead(status, { 'content-type': 'application/json' }).end(body));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`, server };
}

const servers: Server[] = [];
after(() => servers.forEach((s) => s.close()));

test('httpReady: true on 2xx, otherwise the status and the start of the body', async () => {
  const ready = await answering(200, '{"status":"ready"}');
  const notReady = await answering(503, `{"status":"not ready","checks":{"signingKeys":"${'x'.repeat(400)}"}}`);
  servers.push(ready.server, notReady.server);
  assert.equal(await httpReady(ready.url), true);
  const answer = await httpReady(notReady.url);
  assert.equal(typeof answer, 'string');
  assert.match(answer as string, /^HTTP 503 \{"status":"not ready","checks":\{"signingKeys":"x+$/);
  assert.equal((answer as string).length, 'HTTP 503 '.length + 300);
});

test('a refused connection is told with its cause', async () => {
  const closed = await answering(200, '');
  await new Promise<void>((resolve) => closed.server.close(() => resolve()));
  const failure = await httpReady(closed.url).then(
    () => 'answered',
    (err: unknown) => failureOf(err),
  );
  assert.match(failure, /^fetch failed: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
});

test("a process that does not get ready within the time fails with its probe's last answer", async () => {
  const stays = startProcess('stays', require.resolve('./processes.fixture'), {}, quiet);
  try {
    const answers = ['HTTP 503 {"status":"not ready"}', false] as const;
    let asked = 0;
    await assert.rejects(
      waitUntilReady(stays, async () => answers[Math.min(asked++, 1)]!, 250),
      /stays: was not ready within 250 ms \(its last readiness probe: not ready\)/,
    );
    await assert.rejects(
      waitUntilReady(stays, async () => 'HTTP 503 {"status":"not ready"}', 150),
      /\(its last readiness probe: HTTP 503 \{"status":"not ready"\}\)/,
    );
    await assert.rejects(
      waitUntilReady(stays, () => Promise.reject(new Error('fetch failed', { cause: new Error('timed out') })), 150),
      /\(its last readiness probe: fetch failed: timed out\)/,
    );
  } finally {
    await stopProcess(stays, 2_000);
  }
});
