// The webhook receiver at the unit boundary: signed deliveries from this test, the drive list from the client
// package's contract server (the change feed end to end: payroll.test.ts; the real webhooks service: after its merge).
import { createMileageClient, signWebhook } from '@mileage/client';
import { ContractServer } from '@mileage/client/testing';
import { parse } from 'csv-parse/sync';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { reportedDrive } from './fixtures.test-helpers';
import { createReceiver, type Receiver } from './receiver';
import { PayrollStore } from './store';

const SECRET = `whsec_${Buffer.from('payroll receiver test secret 32b').toString('base64')}`;
const T = (s: number) => new Date(Date.UTC(2026, 10, 2, 10, 0, s)).toISOString();
const api = new ContractServer();
const dir = mkdtempSync(path.join(tmpdir(), 'payroll-receiver-'));
const csv = path.join(dir, 'drives.csv');
let receiver: Receiver;
let url: string;
const logged: string[] = [];

const row = (id: number, s: number, status = 'submitted') => {
  const { id: _id, modified, ...fields } = reportedDrive(id, T(s), { status });
  return { id, modified, fields };
};
const ids = () =>
  (parse(readFileSync(csv, 'utf8'), { columns: true }) as Record<string, string>[]).map(
    (r) => `${r.drive_id}:${r.status}`,
  );
const deliver = (id: string, event: object, secret = SECRET) => {
  const body = JSON.stringify(event);
  return fetch(url, {
    method: 'POST',
    headers: { ...signWebhook(secret, id, body), 'content-type': 'application/json' },
    body,
  });
};
const driveEvent = (type: string, driveId: number, s: number, groupId = '1') => ({
  type,
  timestamp: T(s),
  data: { drive_id: driveId, group_id: groupId, user_id: 'BobDriver1', modified: T(s) },
});

before(async () => {
  await api.start();
  api.rows = [row(1, 1), row(2, 2), row(3, 3)];
  const store = new PayrollStore(csv, path.join(dir, 'drives.state.json'), '1');
  receiver = createReceiver({
    secret: SECRET,
    client: createMileageClient({ baseUrl: api.url, token: 'test-token' }),
    store,
    log: (line) => logged.push(line),
  });
  receiver.server.listen(0, '127.0.0.1');
  await once(receiver.server, 'listening');
  url = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}/webhooks`;
  await receiver.sync();
});
after(async () => {
  receiver.server.close();
  await api.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('a withdrawal removes the row at once; the same webhook-id again changes nothing', async () => {
  assert.deepEqual(ids(), ['1:submitted', '2:submitted', '3:submitted']);
  // The feed does not show the withdrawal yet (as on a platform without the change feed): the event alone removes it.
  const res = await deliver('msg_w1', driveEvent('drive.report_withdrawn', 2, 10));
  assert.equal(res.status, 204);
  assert.deepEqual(ids(), ['1:submitted', '3:submitted']);
  await receiver.idle();
  assert.deepEqual(ids(), ['1:submitted', '3:submitted'], 'the sync it started does not bring the row back');
  const requests = api.requests.length;
  assert.equal((await deliver('msg_w1', driveEvent('drive.report_withdrawn', 2, 10))).status, 204);
  await receiver.idle();
  assert.equal(api.requests.length, requests, 'a repeated delivery starts no sync');
});

test('a report event starts a sync that brings the new state; a deletion older than the row is ignored', async () => {
  api.rows.push(row(4, 20), { ...row(1, 21, 'approved') });
  assert.equal((await deliver('msg_r4', driveEvent('drive.reported', 4, 20))).status, 204);
  await receiver.idle();
  assert.deepEqual(ids(), ['1:approved', '3:submitted', '4:submitted']);
  assert.equal((await deliver('msg_d1', driveEvent('drive.deleted', 1, 15))).status, 204);
  await receiver.idle();
  assert.deepEqual(ids(), ['1:approved', '3:submitted', '4:submitted']);
});

test('a wrong signature is 400, another team’s event is ignored, other paths and methods are refused', async () => {
  const other = `whsec_${Buffer.from('not the subscription secret 32by').toString('base64')}`;
  assert.equal((await deliver('msg_x', driveEvent('drive.deleted', 3, 30), other)).status, 400);
  assert.equal((await deliver('msg_g2', driveEvent('drive.deleted', 3, 30, '2'))).status, 204);
  await receiver.idle();
  assert.deepEqual(ids(), ['1:approved', '3:submitted', '4:submitted']);
  assert.equal((await fetch(url)).status, 405);
  assert.equal((await fetch(url.replace('/webhooks', '/other'), { method: 'POST' })).status, 404);
  const big = await fetch(url, { method: 'POST', body: 'x'.repeat(300 * 1024) }).catch(() => undefined);
  assert.ok(!big || big.status === 413);
  assert.ok(logged.some((l) => l.startsWith('refused a delivery')));
});
