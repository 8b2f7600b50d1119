import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PerTurnGroups } from './per-turn';

test("one turn's items in groups by key, handed over once the turn ends; the next turn starts afresh", async () => {
  const flushed: string[][][] = [];
  const turns = new PerTurnGroups<string[]>((groups) => flushed.push(groups));
  const add = (key: string, item: string) => turns.of(key, () => []).push(item);
  add('org 1', 'a');
  add('org 2', 'b');
  add('org 1', 'c');
  assert.deepEqual(flushed, [], 'nothing before the turn ends');
  await new Promise((resolve) => setImmediate(resolve));
  add('org 1', 'd');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(flushed, [[['a', 'c'], ['b']], [['d']]]);
});
