// The token source of unattended jobs against a node:http token endpoint.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { oauthToken } from './client';

const forms: URLSearchParams[] = [];
const auth: (string | undefined)[] = [];
let expiresIn = 300;
let fail = false;
const server = createServer(async (req, res) => {
  let body = '';
  for await (const chunk of req) body += chunk;
  const form = new URLSearchParams(body);
  forms.push(form);
  auth.push(req.headers.authorization);
  res.setHeader('content-type', 'application/json');
  if (fail) {
    res
      .writeHead(400)
      .end(JSON.stringify({ error: 'invalid_grant', error_description: `bad ${form.get('password')}` }));
    return;
  }
  res.end(
    JSON.stringify({ access_token: `at-${forms.length}`, expires_in: expiresIn, refresh_token: `rt-${forms.length}` }),
  );
});
let tokenUrl: string;
before(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  tokenUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
});
after(() => server.close());

test('an access token is kept until 30 s before it expires; a rotated refresh token is used next', async () => {
  const token = oauthToken({
    tokenUrl,
    clientId: 'payroll',
    clientSecret: 's3cret',
    grant: { grant_type: 'refresh_token', refresh_token: 'rt-0' },
    scope: 'groups_read_reported_drives',
  });
  const [a, b] = await Promise.all([token(), token()]);
  assert.equal(a, 'at-1');
  assert.equal(b, 'at-1', 'concurrent callers share one request');
  assert.equal(await token(), 'at-1');
  assert.equal(forms.length, 1);
  assert.equal(forms[0]!.get('refresh_token'), 'rt-0');
  assert.equal(forms[0]!.get('scope'), 'groups_read_reported_drives');
  assert.equal(auth[0], `Basic ${Buffer.from('payroll:s3cret').toString('base64')}`);
  expiresIn = 20; // already within the 30 s margin: asked again every time
  const short = oauthToken({
    tokenUrl,
    clientId: 'payroll',
    grant: { grant_type: 'refresh_token', refresh_token: 'rt-a' },
  });
  await short();
  await short();
  assert.equal(forms.at(-1)!.get('refresh_token'), `rt-${forms.length - 1}`, 'the rotated refresh token');
  assert.equal(auth.at(-1), undefined, 'a public client sends no secret');
});

test('a refused grant is an error that names the status and code, not the request', async () => {
  fail = true;
  const token = oauthToken({
    tokenUrl,
    clientId: 'mileage-dev',
    grant: { grant_type: 'password', username: 'a', password: 'hunter2' },
  });
  await assert.rejects(token(), (err: Error) => {
    assert.equal(err.message, 'token endpoint answered 400 (invalid_grant)');
    return true;
  });
  fail = false;
});
