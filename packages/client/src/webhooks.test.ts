// Webhook signatures: what the standardwebhooks library checks, through verifyWebhook's header handling and tolerance,
// and a real node:http receiver fed the exact bytes a sender signed.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { signWebhook, verifyWebhook, WebhookVerificationError } from './webhooks';

const SECRET = `whsec_${Buffer.from('a secret of thirty-two bytes!!!!').toString('base64')}`;
const OTHER = `whsec_${Buffer.from('another secret of 32 bytes......').toString('base64')}`;
const body = JSON.stringify({
  type: 'drive.report_withdrawn',
  timestamp: '2026-11-23T12:00:00.000Z',
  data: { drive_id: 17, group_id: '1', user_id: 'BobDriver1', modified: '2026-11-23T12:00:00.000Z' },
});

test('a delivery signed with the secret verifies and yields the event and its webhook-id', () => {
  const headers = signWebhook(SECRET, 'msg_1', body);
  const verified = verifyWebhook(SECRET, headers, body);
  assert.equal(verified.id, 'msg_1');
  assert.equal(verified.event.type, 'drive.report_withdrawn');
  assert.equal(verified.event.data.drive_id, 17);
  assert.equal(verified.signedAt.getTime(), Number(headers['webhook-timestamp']) * 1000);
  // A Buffer body, fetch Headers and Node's header record (names in any case) are all accepted.
  assert.equal(verifyWebhook(SECRET, new Headers(headers), Buffer.from(body)).id, 'msg_1');
  const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
  assert.equal(verifyWebhook(SECRET, upper, body).id, 'msg_1');
});

test('a changed body, id or timestamp, another secret, or missing headers are refused', () => {
  const headers = signWebhook(SECRET, 'msg_1', body);
  const refused = (h: Record<string, string | string[] | undefined>, b = body, secret = SECRET) =>
    assert.throws(() => verifyWebhook(secret, h, b), WebhookVerificationError);
  refused(headers, body.replace('17', '18'));
  refused({ ...headers, 'webhook-id': 'msg_2' });
  refused({ ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) });
  refused(headers, body, OTHER);
  refused({ ...headers, 'webhook-signature': undefined });
  refused({ ...headers, 'webhook-id': ['msg_1', 'msg_1'] });
  refused({ ...headers, 'webhook-timestamp': '12e3' });
  refused({ ...headers, 'webhook-signature': 'v1,AAAA' });
});

test('several signatures (a rotated secret): one that matches is enough', () => {
  const headers = signWebhook(SECRET, 'msg_1', body);
  const old = signWebhook(OTHER, 'msg_1', body, new Date(Number(headers['webhook-timestamp']) * 1000));
  const both = { ...headers, 'webhook-signature': `${old['webhook-signature']} ${headers['webhook-signature']}` };
  assert.equal(verifyWebhook(SECRET, both, body).id, 'msg_1');
  assert.equal(verifyWebhook(OTHER, both, body).id, 'msg_1');
  const split = { ...headers, 'webhook-signature': [old['webhook-signature']!, headers['webhook-signature']!] };
  assert.equal(verifyWebhook(SECRET, split, body).id, 'msg_1');
});

test('timestamps outside the tolerance are refused, in both directions; the tolerance can only narrow', () => {
  const now = Date.now();
  assert.throws(() => verifyWebhook(SECRET, signWebhook(SECRET, 'm', body, new Date(now - 301_000)), body), {
    name: 'WebhookVerificationError',
  });
  assert.throws(() => verifyWebhook(SECRET, signWebhook(SECRET, 'm', body, new Date(now + 301_000)), body), {
    name: 'WebhookVerificationError',
  });
  const twentyAgo = signWebhook(SECRET, 'm', body, new Date(now - 20_000));
  assert.equal(verifyWebhook(SECRET, twentyAgo, body).id, 'm');
  assert.throws(() => verifyWebhook(SECRET, twentyAgo, body, { toleranceSeconds: 10 }), WebhookVerificationError);
  assert.throws(() => verifyWebhook(SECRET, twentyAgo, body, { toleranceSeconds: 3600 }), RangeError);
});

test('a node:http receiver verifies the raw bytes it was sent', async () => {
  const seen: string[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    try {
      seen.push(verifyWebhook(SECRET, req.headers, Buffer.concat(chunks)).event.type);
      res.writeHead(204).end();
    } catch (err) {
      res.writeHead(err instanceof WebhookVerificationError ? 400 : 500).end();
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  try {
    const post = (headers: Record<string, string>, payload: string) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload });
    assert.equal((await post(signWebhook(SECRET, 'msg_9', body), body)).status, 204);
    assert.equal((await post(signWebhook(OTHER, 'msg_9', body), body)).status, 400);
    // Re-serialised JSON (key order or spacing changed) is other bytes: refused.
    const reserialised = JSON.stringify(JSON.parse(body), null, 1);
    assert.equal((await post(signWebhook(SECRET, 'msg_9', body), reserialised)).status, 400);
    assert.deepEqual(seen, ['drive.report_withdrawn']);
  } finally {
    server.close();
  }
});
