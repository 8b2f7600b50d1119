import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CursorCodec } from './cursor';

const KEY_A = 'cursor-test-key-a-0123456789abcdefghij';
const KEY_B = 'cursor-test-key-b-0123456789abcdefghij';
const KEY_C = 'cursor-test-key-c-0123456789abcdefghij';
const QUERY = CursorCodec.fingerprint({ route: 'drives', user: 'BobDriver1' });
const POSITION = { sortTime: '2026-11-25T10:00:00.000Z', id: 42 };

test('a cursor signed with the previous key is accepted; new cursors are signed with the current key', () => {
  const issuedBeforeRotation = new CursorCodec(KEY_A).encode(POSITION, QUERY);
  const rotated = new CursorCodec(KEY_B, KEY_A);
  assert.deepEqual(rotated.decode(issuedBeforeRotation, QUERY), POSITION);
  const issuedAfterRotation = rotated.encode(POSITION, QUERY);
  assert.notEqual(issuedAfterRotation, issuedBeforeRotation);
  // Signed with B: a replica that holds only B takes it, one that holds only A does not.
  assert.deepEqual(new CursorCodec(KEY_B).decode(issuedAfterRotation, QUERY), POSITION);
  assert.equal(new CursorCodec(KEY_A).decode(issuedAfterRotation, QUERY), undefined);
});

test('the first step of a rotation (the new key as previous) accepts both keys and still signs with the old one', () => {
  const stepOne = new CursorCodec(KEY_A, KEY_B);
  assert.deepEqual(stepOne.decode(new CursorCodec(KEY_B).encode(POSITION, QUERY), QUERY), POSITION);
  assert.deepEqual(new CursorCodec(KEY_A).decode(stepOne.encode(POSITION, QUERY), QUERY), POSITION);
});

test('once the previous key is removed, its cursors are refused; a third key is never accepted', () => {
  const issuedWithA = new CursorCodec(KEY_A).encode(POSITION, QUERY);
  assert.equal(new CursorCodec(KEY_B).decode(issuedWithA, QUERY), undefined);
  assert.equal(new CursorCodec(KEY_B, KEY_C).decode(issuedWithA, QUERY), undefined);
});

test('the previous key does not loosen the other checks: another query or an edited body is refused', () => {
  const rotated = new CursorCodec(KEY_B, KEY_A);
  const issuedWithA = new CursorCodec(KEY_A).encode(POSITION, QUERY);
  assert.equal(rotated.decode(issuedWithA, CursorCodec.fingerprint({ route: 'drives', user: 'other' })), undefined);
  const [, signature] = issuedWithA.split('.');
  const edited = Buffer.from(JSON.stringify({ v: 1, q: QUERY, t: POSITION.sortTime, i: 43 })).toString('base64url');
  assert.equal(rotated.decode(`${edited}.${signature}`, QUERY), undefined);
});

test('a cursor carries the restore epoch it was read in, and one without an epoch decodes as before', () => {
  const codec = new CursorCodec('a-cursor-secret-of-at-least-32-characters');
  const epoch = { id: '7713352434945769684.2', readAt: '2026-11-28T22:00:00.123Z' };
  const withEpoch = codec.encode({ sortTime: '2026-11-28T21:00:00Z', id: 7, epoch }, 'q');
  assert.deepEqual(codec.decode(withEpoch, 'q'), { sortTime: '2026-11-28T21:00:00Z', id: 7, epoch });
  const without = codec.encode({ sortTime: '2026-11-28T21:00:00Z', id: 7 }, 'q');
  assert.deepEqual(codec.decode(without, 'q'), { sortTime: '2026-11-28T21:00:00Z', id: 7 });
});
