import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { test } from 'node:test';

test('the gateway refuses to start on invalid configuration and says which variables are wrong', () => {
  const result = spawnSync(process.execPath, [path.join(__dirname, 'main.js')], {
    env: { PATH: process.env.PATH, PORT: 'eighty', OIDC_ALGORITHMS: 'HS256', REDIS_URL: 'http://secret@host' },
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(result.status, 78);
  assert.match(result.stderr, /PORT: /);
  assert.match(result.stderr, /OIDC_ALGORITHMS: only asymmetric JWS algorithms/);
  assert.match(result.stderr, /REDIS_URL: .*\(set \(hidden\)\)/);
  assert.doesNotMatch(result.stderr, /secret@host/);
});
