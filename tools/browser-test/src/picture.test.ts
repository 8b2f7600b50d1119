// Part of `npm test` (no browser needed): the README's picture of the console is not older than the page it shows.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  PICTURE,
  PICTURED_PATH,
  pageFingerprint,
  pictureDocument,
  readFingerprint,
  swaggerUiVersion,
  withFingerprint,
} from './picture';

describe('docs/console.png', () => {
  test('shows the page as it is now', () => {
    assert.equal(
      readFingerprint(readFileSync(PICTURE)),
      pageFingerprint(),
      'the /docs page changed since docs/console.png was taken: run `npm run docs:screenshot` and commit the picture',
    );
  });

  test('the fingerprint follows what is on screen, not what is below it or the key order', () => {
    const now = pageFingerprint();
    const edit = (change: (doc: ReturnType<typeof pictureDocument>) => void) => {
      const doc = pictureDocument();
      change(doc);
      return pageFingerprint(doc);
    };
    assert.notEqual(
      edit((doc) => (doc.info.description = doc.info.description.replace('Webhooks (+)', 'Webhooks (planned)'))),
      now,
    );
    assert.notEqual(
      edit((doc) => Object.assign(doc.paths[PICTURED_PATH]!.get!, { summary: 'Who am I' })),
      now,
    );
    assert.notEqual(pageFingerprint(pictureDocument(), `${swaggerUiVersion()}-next`), now);
    // Below the picture: another route, the SCIM tag.
    assert.equal(
      edit((doc) => Object.assign(doc.paths['/v1/groups']!.get!, { summary: 'Teams' })),
      now,
    );
    assert.equal(
      edit((doc) => (doc.tags[1]!.description = 'SCIM')),
      now,
    );
    assert.equal(
      edit((doc) => (doc.info = Object.fromEntries(Object.entries(doc.info).reverse()) as typeof doc.info)),
      now,
    );
  });

  test('the fingerprint travels in the PNG, replaced when the picture is retaken', () => {
    const png = readFileSync(PICTURE);
    const once = withFingerprint(png, 'a'.repeat(64));
    assert.equal(readFingerprint(once), 'a'.repeat(64));
    const twice = withFingerprint(once, 'b'.repeat(64));
    assert.equal(readFingerprint(twice), 'b'.repeat(64));
    assert.equal(twice.length, once.length);
    assert.equal(readFingerprint(withFingerprint(png, 'c')), 'c');
  });
});
