// The erasing process of the kill-anywhere test (erasure.test.ts): erases one organization from every owner's schema
// of one database and writes a line to stdout before each batch's COMMIT and after it, the progress the test kills on.
import { eraseOrganization } from '@mileage/runtime/database';
import { writeSync } from 'node:fs';
import { ERASURE_OWNERS } from './erasure';

async function main(): Promise<void> {
  const [url, organization, batch] = process.argv.slice(2);
  for (const owner of ERASURE_OWNERS) {
    const db = owner.openDatabase({ url: url! });
    try {
      await eraseOrganization(db.knex, owner.plan, Number(organization), {
        batchRows: Number(batch),
        onBatch: ({ table, rows }, phase) => writeSync(1, `${phase} ${owner.plan.schema}.${table} ${rows}\n`),
      });
    } finally {
      await db.close();
    }
  }
  writeSync(1, 'done\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
