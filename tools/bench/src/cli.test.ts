import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFlags, usage } from './cli';

const OPTIONS = {
  duration: { type: 'string', default: '10' },
  'cpu-prof': { type: 'string' },
  smoke: { type: 'boolean', default: false },
} as const;

test('the options are parsed as given, with their defaults', () => {
  assert.deepEqual({ ...parseFlags('bench', OPTIONS, ['--duration', '3', '--smoke']) }, { duration: '3', smoke: true });
  assert.deepEqual({ ...parseFlags('bench', OPTIONS, []) }, { duration: '10', smoke: false });
});

test('--help lists every option, the kind of value it takes and its default', () => {
  assert.equal(
    usage('npm run bench --', OPTIONS),
    [
      'usage: npm run bench -- [options]  (docs/benchmarks.md describes each)',
      '  --duration <value> (default: "10")',
      '  --cpu-prof <value>',
      '  --smoke',
      '  --help',
      '',
    ].join('\n'),
  );
});

test('an option the bench does not take exits with 2 after the list', (t) => {
  const written: string[] = [];
  t.mock.method(process.stderr, 'write', (chunk: string) => written.push(chunk) > 0);
  t.mock.method(process, 'exit', (code: number) => {
    throw new Error(`exit ${code}`);
  });
  assert.throws(() => parseFlags('bench', OPTIONS, ['--bogus']), /exit 2/);
  t.mock.restoreAll();
  assert.match(written.join(''), /^bench: Unknown option '--bogus'\nusage: bench \[options\]/);
});
