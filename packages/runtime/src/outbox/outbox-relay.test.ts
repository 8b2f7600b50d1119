import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import knexFactory, { type Knex } from 'knex';
import { createOutboxTable, outboxOrganizationExpandStatements, recordEvent } from './outbox';
import { OutboxRelay, toWebhookEvent, type OutboxRow } from './outbox-relay';
import { createTestDatabase, type TestDatabase } from '../testing';

let testDb: TestDatabase;
let knex: Knex;

const record = (n: number, groupId = '7') =>
  knex.transaction(async (trx) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++)
      ids.push(
        await recordEvent(trx, { type: 'drive.reported', groupId, userId: 'BobDriver1', data: { id: String(i) } }),
      );
    return ids;
  });
const pending = async () => Number((await knex('outbox').count<{ count: string }[]>('*'))[0]!.count);

before(async () => {
  testDb = await createTestDatabase('relay');
  knex = knexFactory({ client: 'pg', connection: testDb.url, pool: { min: 0, max: 6 } });
  await createOutboxTable(knex);
  for (const statement of outboxOrganizationExpandStatements()) await knex.raw(statement);
});
after(async () => {
  await knex.destroy();
  await testDb.drop();
});

describe('OutboxRelay', () => {
  test('publishes in (occurred_at, id) order in batches and deletes only what was published', async () => {
    const ids = await record(7);
    const batches: OutboxRow[][] = [];
    const relay = new OutboxRelay({ knex, batchSize: 3, publish: async (rows) => void batches.push(rows) });
    assert.equal(await relay.run(), 7);
    assert.deepEqual(
      batches.map((b) => b.length),
      [3, 3, 1],
    );
    const expected = (await Promise.resolve(ids)).slice().sort();
    assert.deepEqual(
      batches
        .flat()
        .map((r) => r.id)
        .sort(),
      expected,
    );
    const event = toWebhookEvent(batches[0]![0]!);
    assert.equal(event.groupId, 7);
    assert.equal(event.userId, 'BobDriver1');
    assert.equal(event.organizationId, 1, 'the organization the event was recorded in');
    assert.ok(JSON.parse(event.dataJson).id !== undefined);
    assert.equal(await pending(), 0);
  });

  test('a failed publish keeps the rows, and they go with the next run', async () => {
    await record(4);
    let fail = true;
    const seen: string[] = [];
    const relay = new OutboxRelay({
      knex,
      publish: async (rows) => {
        if (fail) throw new Error('webhooks unavailable');
        seen.push(...rows.map((r) => r.id));
      },
    });
    await assert.rejects(relay.run(), /unavailable/);
    assert.equal(await pending(), 4);
    fail = false;
    assert.equal(await relay.run(), 4);
    assert.equal(seen.length, 4);
  });

  test('a relay killed mid-publish loses nothing: its locks go with its connection and the rows are relayed again', async () => {
    const ids = await record(3);
    const doomed = knexFactory({ client: 'pg', connection: testDb.url, pool: { min: 0, max: 1 } });
    let publishing!: () => void;
    const started = new Promise<void>((resolve) => (publishing = resolve));
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const relay = new OutboxRelay({
      knex: doomed,
      publish: () => {
        publishing();
        return answered; // the process hangs here, and its connection dies before it can delete anything
      },
    });
    const run = relay.run().catch(() => 'died');
    await started;
    // Meanwhile another relay skips the locked rows rather than waiting or sending them too.
    const other: string[] = [];
    await new OutboxRelay({ knex, publish: async (rows) => void other.push(...rows.map((r) => r.id)) }).run();
    assert.deepEqual(other, []);
    // The process dies: its connection is terminated by the server.
    await knex.raw(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle in transaction'`,
    );
    answer();
    assert.equal(await run, 'died');
    await doomed.destroy();
    const after: string[] = [];
    await new OutboxRelay({ knex, publish: async (rows) => void after.push(...rows.map((r) => r.id)) }).run();
    assert.deepEqual(after.sort(), ids.slice().sort());
  });

  test('concurrent relays take disjoint batches', async () => {
    const ids = await record(200);
    const seen: string[] = [];
    const relays = Array.from(
      { length: 3 },
      () =>
        new OutboxRelay({
          knex,
          batchSize: 10,
          publish: async (rows) => {
            seen.push(...rows.map((r) => r.id));
            await new Promise((resolve) => setImmediate(resolve));
          },
        }),
    );
    await Promise.all(relays.map((r) => r.run()));
    assert.equal(seen.length, 200);
    assert.deepEqual(seen.slice().sort(), ids.slice().sort());
  });
});
