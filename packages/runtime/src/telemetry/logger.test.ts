import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { createLogger, fixedFieldLogger, isWarningOrWorse, LOG_CHUNK_BYTES } from './logger';

/**
 * A buffered destination like stdout's, by default written synchronously so that what reached the file can be read at
 * once; `sync: false` writes it from the thread pool, as stdout is.
 */
function bufferedFile({ sync = true } = {}): {
  destination: ReturnType<typeof pino.destination>;
  lines(): Record<string, unknown>[];
  done(): void;
} {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'logger-test-'));
  const file = path.join(dir, 'log');
  const destination = pino.destination({ dest: file, sync, minLength: LOG_CHUNK_BYTES });
  return {
    destination,
    // Only whole lines: with `sync: false` a pool thread may be writing a chunk while the file is read.
    lines: () =>
      readFileSync(file, 'utf8')
        .split('\n')
        .slice(0, -1)
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

test(
  'a warning logged while a chunk is on its way is written when that write ends, not at the next timer',
  { timeout: 10_000 },
  async (t) => {
    const file = bufferedFile({ sync: false });
    t.after(file.done);
    await once(file.destination, 'ready');
    const logger = createLogger({ service: 'logger-test', destination: file.destination });
    const filler = 'x'.repeat(200);
    // The first chunk goes to a pool thread; the lines after it, and the warning, wait for that write to end.
    for (let i = 0; i < 40; i++) logger.info({ i, filler }, 'line');
    logger.warn('urgent');
    // Each finished write emits 'write'; without the flush after the drain the warning would stay buffered (no timer here).
    while (!file.lines().some((line) => line.msg === 'urgent')) await once(file.destination, 'write');
    const written = file.lines();
    assert.equal(written.length, 41);
    assert.deepEqual(
      written.map((line) => line.msg),
      [...Array<string>(40).fill('line'), 'urgent'],
    );
  },
);

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

test('isWarningOrWorse tells the lines logged at warn and above, not a field that quotes a level', () => {
  const lines: string[] = [];
  const logger = createLogger({ service: 'logger-test', level: 'trace', destination: { write: (l) => lines.push(l) } });
  logger.trace('t');
  logger.debug('d');
  logger.info({ quoted: '"level":"error"' }, 'i');
  logger.warn('w');
  logger.error('e');
  logger.fatal('f');
  assert.deepEqual(
    lines.map((line) => [(JSON.parse(line) as { msg: string }).msg, isWarningOrWorse(line)]),
    [
      ['t', false],
      ['d', false],
      ['i', false],
      ['w', true],
      ['e', true],
      ['f', true],
    ],
  );
});
