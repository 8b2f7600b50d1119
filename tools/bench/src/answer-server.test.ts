import { createLogger, isWarningOrWorse } from '@mileage/runtime/telemetry';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { answerRequests, Refused } from './answer-server';

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

test('a route that fails answers 500 and logs one error line with its URL and call; a refusal answers its status, unlogged', async () => {
  const lines: string[] = [];
  const logger = createLogger({ service: 'floor', destination: { write: (line: string) => void lines.push(line) } });
  const dropped = Object.assign(new Error('14 UNAVAILABLE: Connection dropped'), {
    code: 14,
    details: 'Connection dropped',
    grpcService: 'mileage.drives.v1.DrivesService',
    grpcMethod: 'ListUserDrives',
  });
  const server = await serving(
    answerRequests((req) => {
      if (req.url === '/ok') return Promise.resolve('{"a":1}');
      if (req.url === '/refused') return Promise.reject(new Refused(403));
      if (req.url === '/broken') return Promise.reject(dropped);
      return undefined;
    }, logger),
  );
  try {
    assert.deepEqual(await server.get('/ok'), [200, '{"a":1}']);
    assert.deepEqual(await server.get('/refused'), [403, '']);
    assert.deepEqual(await server.get('/unknown'), [404, '']);
    assert.deepEqual(await server.get('/broken'), [500, '']);
  } finally {
    await server.close();
  }
  assert.equal(lines.length, 1, 'only the failure is logged');
  assert.ok(isWarningOrWorse(lines[0]!.trimEnd()), lines[0]);
  const { level, service, url, err, msg, grpc_service, grpc_method, grpc_code, grpc_details } = JSON.parse(lines[0]!);
  assert.deepEqual(
    { level, service, url, err, msg, grpc_service, grpc_method, grpc_code, grpc_details },
    {
      level: 'error',
      service: 'floor',
      url: '/broken',
      err: '14 UNAVAILABLE: Connection dropped',
      msg: 'request failed',
      grpc_service: 'mileage.drives.v1.DrivesService',
      grpc_method: 'ListUserDrives',
      grpc_code: 'UNAVAILABLE',
      grpc_details: 'Connection dropped',
    },
  );
});
