// `npm run bench:cold-cache`: why a small operation costs several times more inside the loaded services than in a
// loop. Times a few operations the services do on every request in a tight loop (every cache warm), and again right
// after a walk over a buffer larger than the processor's caches, which is what a process finds when the others on its
// core have run since its last request (docs/benchmarks.md, "Cold caches").
import { createHmac } from 'node:crypto';
import { parseFlags } from './cli';

/** Where the Error goes, so that it is made (and its stack captured) rather than optimised away. */
let lastError: Error | undefined;

function nested(depth: number, leaf: () => number): number {
  return depth === 0 ? leaf() : nested(depth - 1, leaf) + 0;
}

/** Operations of every request: an attestation's HMAC, an Error capturing its stack (unread), a small JSON document. */
const OPERATIONS: Record<string, () => unknown> = {
  'HMAC-SHA256 of 300 bytes': () => createHmac('sha256', 'k'.repeat(43)).update('d'.repeat(300)).digest(),
  'new Error(), 10 frames deep': () =>
    nested(10, () => {
      lastError = new Error('x');
      return 1;
    }),
  'JSON.stringify, ~250 bytes': () => JSON.stringify({ a: 'x'.repeat(200), b: [1, 2, 3], c: { d: 'e' } }),
};

const micros = (ns: bigint, n: number) => Number(ns) / n / 1000;

function main(): void {
  const values = parseFlags('npm run bench:cold-cache --', {
    calls: { type: 'string', default: '2000' },
    /** The walk between two cold calls: larger than the last-level cache. */
    mb: { type: 'string', default: '32' },
    smoke: { type: 'boolean', default: false },
  });
  if (values.smoke) Object.assign(values, { calls: '50', mb: '8' });
  const calls = Number(values.calls);
  const buffer = new Float64Array((Number(values.mb) * 1024 * 1024) / 8);
  let sink = 0;
  // One read and write per 64-byte line: every line of the buffer passes through the caches.
  const walk = () => {
    for (let i = 0; i < buffer.length; i += 8) sink += buffer[i]!++;
  };
  const lines = [
    `${calls} calls each, Node.js ${process.versions.node}; µs per call: in a tight loop, and right after a ` +
      `${values.mb} MB walk`,
  ];
  for (const [name, operation] of Object.entries(OPERATIONS)) {
    for (let i = 0; i < Math.max(calls, 5_000); i++) operation();
    let started = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) operation();
    const warm = process.hrtime.bigint() - started;
    let cold = 0n;
    for (let i = 0; i < calls; i++) {
      walk();
      started = process.hrtime.bigint();
      operation();
      cold += process.hrtime.bigint() - started;
    }
    lines.push(
      `  ${name.padEnd(30)} ${micros(warm, calls).toFixed(1).padStart(7)} ${micros(cold, calls).toFixed(1).padStart(8)}`,
    );
  }
  // Read once, so that no compiler may drop the walk or the Errors.
  if (Number.isNaN(sink) || !lastError) lines.push('');
  process.stdout.write(`${lines.join('\n')}\n`);
}

main();
