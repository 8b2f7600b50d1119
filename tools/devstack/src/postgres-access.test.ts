// A checkout in a private folder (mode 0700, as `mktemp -d` makes) must not stop embedded PostgreSQL as root.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { letPostgresReach, postgresBinariesDir, unsearchableFolders } from './postgres-access';

const scratch = mkdtempSync(path.join(tmpdir(), 'pg-access-'));
chmodSync(scratch, 0o755);
after(() => rmSync(scratch, { recursive: true, force: true }));

describe('embedded PostgreSQL reach', () => {
  it('finds the PostgreSQL programs of this platform', async () => {
    assert.ok(existsSync(path.join(await postgresBinariesDir(), 'bin', 'initdb')));
  });

  it('names the private folders on the way to a target, and only those', () => {
    const privateDir = path.join(scratch, 'private');
    const target = path.join(privateDir, 'checkout', 'node_modules');
    mkdirSync(target, { recursive: true });
    chmodSync(privateDir, 0o700);
    assert.deepEqual(unsearchableFolders(target), [{ folder: privateDir, ours: true }]);
    // A folder the user PostgreSQL runs as owns (its data folder after initdb, mode 0700) is no obstacle to it.
    assert.deepEqual(unsearchableFolders(target, statSync(privateDir).uid), []);
    chmodSync(privateDir, 0o755);
    assert.deepEqual(unsearchableFolders(target), []);
  });

  it('as root grants search but not listing on our private folders; as anyone else changes nothing', async () => {
    const privateDir = path.join(scratch, 'clone');
    const data = path.join(privateDir, 'data');
    mkdirSync(data, { recursive: true });
    chmodSync(privateDir, 0o700);
    const said: string[] = [];
    await letPostgresReach([data], (m) => said.push(m));
    const mode = statSync(privateDir).mode & 0o777;
    if (process.getuid?.() === 0) {
      assert.equal(mode, 0o701);
      assert.equal(said.length, 1);
      assert.match(said[0]!, new RegExp(`o\\+x.*${privateDir}`));
    } else {
      assert.equal(mode, 0o700);
      assert.deepEqual(said, []);
    }
  });
});
