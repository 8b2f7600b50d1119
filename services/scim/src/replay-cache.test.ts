import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReplayCache } from './replay-cache';

test('a nonce is refused a second time until its expiry, and taken again after it', () => {
  const cache = new ReplayCache(10, () => assert.fail('nothing evicted below the capacity'));
  assert.equal(cache.firstUse('a', 61_000, 0), true);
  assert.equal(cache.firstUse('a', 61_000, 1_000), false);
  assert.equal(cache.firstUse('a', 61_000, 60_999), false);
  // Its window has closed (the attestation's own check refuses it from now on): the entry is gone.
  assert.equal(cache.firstUse('b', 70_000, 61_000), true);
  assert.equal(cache.size, 1);
  assert.equal(cache.firstUse('a', 122_000, 61_000), true);
});

test('expired entries leave from the front as time passes, so memory follows the window, not the uptime', () => {
  const cache = new ReplayCache(1_000, () => assert.fail('nothing evicted below the capacity'));
  for (let second = 0; second < 600; second++)
    assert.equal(cache.firstUse(`n${second}`, (second + 61) * 1000, second * 1000), true);
  // Alive at second 599: those expiring after it, seconds 539…599.
  assert.equal(cache.size, 61);
});

test('an entry expiring before those in front of it is still refused only until its own expiry', () => {
  const cache = new ReplayCache(10, () => {});
  cache.firstUse('late', 100_000, 0);
  cache.firstUse('early', 10_000, 0);
  assert.equal(cache.firstUse('early', 10_000, 9_999), false);
  assert.equal(cache.firstUse('early', 20_000, 10_000), true);
});

test('at capacity the oldest entry gives way and each eviction is reported', () => {
  let evictions = 0;
  const cache = new ReplayCache(3, () => evictions++);
  for (const nonce of ['a', 'b', 'c']) cache.firstUse(nonce, 60_000, 0);
  assert.equal(evictions, 0);
  assert.equal(cache.firstUse('d', 60_000, 1), true);
  assert.equal(evictions, 1);
  assert.equal(cache.size, 3);
  // 'a' was evicted (its replay is no longer caught: the price of the bound, reported); the others still are.
  assert.equal(cache.firstUse('b', 60_000, 2), false);
  assert.equal(cache.firstUse('d', 60_000, 2), false);
  assert.equal(cache.firstUse('a', 60_000, 2), true);
  assert.equal(evictions, 2);
});
