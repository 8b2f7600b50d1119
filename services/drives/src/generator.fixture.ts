// Random test data that a failing seed reproduces (render.test.ts, export-part.test.ts).
/** A small deterministic generator (mulberry32), so that a failure names its seed. */
export function generator(seed: number) {
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!;
  const maybe = <T>(value: T): T | null => (next() < 0.5 ? null : value);
  return { next, pick, maybe };
}
