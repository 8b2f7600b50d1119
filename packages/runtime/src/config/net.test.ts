import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { freePort } from './net';

test('freePort never hands out one port twice, even when asked concurrently, and the port can be bound', async () => {
  const ports = [
    ...(await Promise.all(Array.from({ length: 50 }, () => freePort()))),
    ...(await Array.from({ length: 50 }).reduce<Promise<number[]>>(
      async (acc) => [...(await acc), await freePort()],
      Promise.resolve([]),
    )),
  ];
  assert.equal(new Set(ports).size, ports.length);
  const last = ports.at(-1)!;
  await new Promise<void>((resolve, reject) => {
    const srv = createServer().once('error', reject);
    srv.listen(last, '127.0.0.1', () => srv.close(() => resolve()));
  });
});

test('freePort stays below the ephemeral range, where outgoing connections take their ports', async () => {
  // Linux only (where the tests run): the kernel's range of ports for outgoing connections.
  const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0]);
  assert.ok(low > 12_000, `this test expects the usual ephemeral range, not one from ${low}`);
  for (let i = 0; i < 20; i++) assert.ok((await freePort()) < low);
});
