import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newSecret, SecretBox, sign } from './secrets';

describe('signing secrets', () => {
  test('a signature verifies with the standardwebhooks package', () => {
    const secret = newSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = JSON.stringify({ type: 'drive.reported', data: { id: '1' } });
    const ts = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(ts),
      'webhook-signature': sign(secret, 'msg_1', ts, body),
    };
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
    assert.throws(() => new Webhook(newSecret()).verify(body, headers));
  });

  test('secrets are sealed at rest with AES-256-GCM and refuse another key', () => {
    const box = new SecretBox('k'.repeat(40));
    const secret = newSecret();
    const sealed = box.seal(secret);
    assert.ok(sealed.startsWith('enc:v1:') && !sealed.includes(secret.slice(6)));
    assert.equal(box.open(sealed), secret);
    assert.throws(() => new SecretBox('x'.repeat(40)).open(sealed), /another key/);
    assert.throws(() => new SecretBox(undefined).open(sealed), /WEBHOOKS_SECRET_KEY/);
    const tampered = sealed.slice(0, -4) + (sealed.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    assert.throws(() => box.open(tampered));
    assert.equal(new SecretBox(undefined).open(new SecretBox(undefined).seal(secret)), secret);
  });
});
