import { testRedisUrl } from '@mileage/runtime/testing';
import { Redis } from 'ioredis';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { HOUR, RateLimits, rateLimitHeaders } from './rate-limit';

describe('RateLimits', () => {
  test('counts per caller per route in a fixed window', async () => {
    const limits = new RateLimits({});
    for (let i = 1; i <= 3; i++) {
      const d = await limits.consume('users.me', 'alice', 3);
      assert.equal(d.allowed, true);
      assert.equal(d.remaining, 3 - i);
    }
    const refused = await limits.consume('users.me', 'alice', 3);
    assert.equal(refused.allowed, false);
    assert.ok(refused.resetInSeconds >= 1 && refused.resetInSeconds <= 60);
    assert.equal((await limits.consume('users.get', 'alice', 3)).allowed, true, 'another route has its own window');
    assert.equal((await limits.consume('users.me', 'bob', 3)).allowed, true, 'another caller has its own window');
  });

  test('the multiplier raises every limit', async () => {
    const limits = new RateLimits({ multiplier: 10 });
    const d = await limits.consume('users.me', 'alice', 30);
    assert.equal(d.limit, 300);
  });

  test('an hourly route counts in its own window of an hour, named in its headers', async () => {
    const limits = new RateLimits({});
    const first = await limits.consume('users.me.export', 'alice', 2, HOUR);
    assert.deepEqual([first.allowed, first.windowSeconds], [true, HOUR]);
    assert.ok(first.resetInSeconds > 60, 'an hour, not a minute');
    assert.equal((await limits.consume('users.me.export', 'alice', 2, HOUR)).allowed, true);
    assert.equal((await limits.consume('users.me.export', 'alice', 2, HOUR)).allowed, false);
    assert.equal((await limits.consume('users.me', 'alice', 2)).allowed, true, 'a minute route counts apart');
    assert.match(rateLimitHeaders(first)['RateLimit-Policy']!, /^"per-hour";q=2;w=3600$/);
  });

  test('headers follow the contract', () => {
    const headers = rateLimitHeaders(
      { allowed: true, limit: 30, remaining: 29, resetInSeconds: 42, windowSeconds: 60 },
      1_700_000_000_000,
    );
    assert.deepEqual(headers, {
      'X-RateLimit-Limit': '30',
      'X-RateLimit-Remaining': '29',
      'X-RateLimit-Reset': String(1_700_000_000 + 42),
      'RateLimit-Policy': '"per-minute";q=30;w=60',
      RateLimit: '"per-minute";r=29;t=42',
    });
  });

  test('replicas sharing one Redis share one limit', async () => {
    const a = new Redis(testRedisUrl(), { enableOfflineQueue: true });
    const b = new Redis(testRedisUrl(), { enableOfflineQueue: true });
    try {
      await Promise.all([a.ping(), b.ping()]);
      const prefix = `test:${randomUUID()}`;
      const replicaA = new RateLimits({ redis: a, keyPrefix: prefix });
      const replicaB = new RateLimits({ redis: b, keyPrefix: prefix });
      for (let i = 0; i < 3; i++) assert.equal((await replicaA.consume('users.me', 'alice', 5)).allowed, true);
      for (let i = 0; i < 2; i++) assert.equal((await replicaB.consume('users.me', 'alice', 5)).allowed, true);
      assert.equal((await replicaA.consume('users.me', 'alice', 5)).allowed, false);
      assert.equal((await replicaB.consume('users.me', 'alice', 5)).allowed, false);
    } finally {
      a.disconnect();
      b.disconnect();
    }
  });
});
