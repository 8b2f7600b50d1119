import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Acknowledgements } from './channels';

test('an announcement resolves once as many acknowledged as received it, those heard before the answer included', async () => {
  const acknowledgements = new Acknowledgements();
  let answer!: (receivers: number) => void;
  const announced = acknowledgements.announce('token-1', () => new Promise<number>((resolve) => (answer = resolve)));
  // One replica acts before the publisher hears Redis's answer; another acknowledges something else.
  acknowledgements.heard('token-1');
  acknowledgements.heard('token-2');
  answer(3);
  let settled = false;
  void announced.then(() => (settled = true));
  await Promise.resolve();
  acknowledgements.heard('token-1');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(settled, false, 'two of three');
  acknowledgements.heard('token-1');
  assert.deepEqual(await announced, { receivers: 3, acknowledged: 3 });
});

test('no subscriber: nothing to wait for', async () => {
  const acknowledgements = new Acknowledgements();
  assert.deepEqual(await acknowledgements.announce('token-1', () => Promise.resolve(0), 60_000), {
    receivers: 0,
    acknowledged: 0,
  });
});

test('a receiver that never acknowledges: the announcement goes on after its timeout, and says how many did', async () => {
  const acknowledgements = new Acknowledgements();
  const announced = acknowledgements.announce('token-1', () => Promise.resolve(2), 50);
  await Promise.resolve();
  acknowledgements.heard('token-1');
  assert.deepEqual(await announced, { receivers: 2, acknowledged: 1 });
  // Nothing is left waiting: a later acknowledgement of the same message finds no one.
  acknowledgements.heard('token-1');
});

test('a failed publish rejects at once, without waiting for anyone', async () => {
  const acknowledgements = new Acknowledgements();
  await assert.rejects(
    acknowledgements.announce('token-1', () => Promise.reject(new Error('redis down')), 60_000),
    /redis down/,
  );
});
