import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { createLogger, fixedFieldLogger, LOG_CHUNK_BYTES } from './logger';

/** A buffered destination like stdout's, written synchronously so that what reached the file can be read at once. */
function bufferedFile(): { destination: pino.DestinationStream; lines(): Record<string, unknown>[]; done(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'logger-test-'));
  const file = path.join(dir, 'log');
  const destination = pino.destination({ dest: file, sync: true, minLength: LOG_CHUNK_BYTES });
  return {
    destination,
    lines: () =>
      readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    done: () => {
      destination.end();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('info lines wait for a chunk; a warning writes them and itself at once, in order', (t) => {
  const file = bufferedFile();
  t.after(file.done);
  const logger = createLogger({ service: 'logger-test', destination: file.destination });
  logger.info({ n: 1 }, 'first');
  logger.info({ n: 2 }, 'second');
  assert.deepEqual(file.lines(), []);
  logger.warn('third');
  assert.deepEqual(
    file.lines().map((line) => [line.msg, line.level]),
    [
      ['first', 'info'],
      ['second', 'info'],
      ['third', 'warn'],
    ],
  );
  logger.error('fourth');
  assert.equal(file.lines().at(-1)?.msg, 'fourth');
});

test('a chunk of info lines is written without waiting for a flush', (t) => {
  const file = bufferedFile();
  t.after(file.done);
  const logger = createLogger({ service: 'logger-test', destination: file.destination });
  const filler = 'x'.repeat(200);
  for (let i = 0; i < 40; i++) logger.info({ i, filler }, 'line');
  const written = file.lines();
  assert.ok(written.length > 0 && written.length < 40, `${written.length} of 40 lines written`);
  assert.deepEqual(
    written.map((line) => line.i),
    written.map((_, i) => i),
  );
});

test('the fixed-field logger writes the same format to the same stream, without the redaction paths', (t) => {
  const file = bufferedFile();
  t.after(file.done);
  const logger = createLogger({ service: 'logger-test', destination: file.destination });
  logger.info({ token: 'secret-value', route: 'getUser' }, 'redacted');
  fixedFieldLogger(logger).info({ token: 'not-a-secret', route: 'getUser' }, 'fixed');
  logger.warn('flush');
  const [redacted, fixed] = file.lines();
  assert.equal(redacted?.token, '[redacted]');
  assert.equal(fixed?.token, 'not-a-secret');
  assert.deepEqual(Object.keys(fixed!), Object.keys(redacted!));
  assert.equal(fixed?.service, 'logger-test');
  assert.equal(fixed?.level, 'info');
  assert.match(String(fixed?.time), /^\d{4}-\d{2}-\d{2}T/);
});

test('fixedFieldLogger refuses a logger of another making', () => {
  assert.throws(() => fixedFieldLogger(pino({ level: 'silent' })), /made by createLogger/);
});
