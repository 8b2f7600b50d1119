import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { floors, metricMb, metricSum, slope, summarise, summariseSoak } from './memory';

describe('soak memory summary', () => {
  it('fits the slope of a line and of a flat series', () => {
    assert.equal(slope([0, 10, 20, 30].map((t) => ({ t, v: 100 + 2 * t }))), 2);
    assert.equal(slope([0, 10, 20].map((t) => ({ t, v: 50 }))), 0);
    assert.equal(slope([{ t: 0, v: 1 }]), 0);
  });

  it('tells a plateau from a slope by the second half only', () => {
    // Climbs fast for 150 s, then flat: a plateau, however large the growth from idle.
    const plateau = Array.from({ length: 61 }, (_, i) => ({ t: i * 5, v: i * 5 < 150 ? 100 + i * 5 : 250 }));
    const p = summarise(100, plateau);
    assert.deepEqual(
      { idle: p.idle, peak: p.peak, end: p.end, growth: p.growth, slope: p.secondHalfMbPerMinute },
      { idle: 100, peak: 250, end: 250, growth: 2.5, slope: 0 },
    );
    // 0.2 MB/s all the way: 12 MB/min and 30 MB over the last 150 s.
    const leak = Array.from({ length: 61 }, (_, i) => ({ t: i * 5, v: 100 + i }));
    const l = summarise(100, leak);
    assert.equal(l.secondHalfMbPerMinute, 12);
    assert.equal(l.secondHalfGrowthMb, 30);
    assert.equal(l.end, 160);
    assert.deepEqual(l.minuteFloors, [100, 112, 124, 136, 148, 160]);
  });

  it('takes the lowest reading of each minute', () => {
    // A sawtooth over a flat floor (no leak) and over a rising one (a leak).
    const saw = (rise: number) => Array.from({ length: 37 }, (_, i) => ({ t: i * 5, v: 30 + (i % 4) * 20 + rise * i }));
    assert.deepEqual(floors(saw(0), 60), [30, 30, 30, 30]);
    assert.deepEqual(floors(saw(1), 60), [30, 42, 54, 66]);
  });

  it('summarises RSS and heap of every process', () => {
    const s = summariseSoak(
      {
        rssMb: { gateway: 100, bare: 50 },
        heapMb: { gateway: 20 },
        heapTotalMb: { gateway: 40 },
        gcSeconds: { gateway: 1 },
      },
      [
        {
          t: 0,
          rssMb: { gateway: 110, bare: 50 },
          heapMb: { gateway: 30 },
          heapTotalMb: { gateway: 50 },
          gcSeconds: { gateway: 1.5 },
        },
        {
          t: 10,
          rssMb: { gateway: 120, bare: 50 },
          heapMb: { gateway: 25 },
          heapTotalMb: { gateway: 50 },
          gcSeconds: { gateway: 2.25 },
        },
      ],
      5,
    );
    assert.deepEqual(Object.keys(s.rss), ['gateway', 'bare']);
    assert.equal(s.rss.gateway!.end, 120);
    assert.equal(s.heap.gateway!.peak, 30);
    assert.equal(s.heapTotal.gateway!.end, 50);
    assert.deepEqual(s.gcSeconds, { gateway: 0.75 });
    assert.equal(s.intervalSeconds, 5);
  });

  it('reads a gauge from a Prometheus text', () => {
    const text = [
      '# HELP nodejs_heap_size_used_bytes Process heap size used from Node.js in bytes.',
      '# TYPE nodejs_heap_size_used_bytes gauge',
      'nodejs_heap_size_used_bytes{service="drives"} 31457280',
      'nodejs_heap_size_total_bytes{service="drives"} 62914560',
    ].join('\n');
    assert.equal(metricMb(text, 'nodejs_heap_size_used_bytes'), 30);
    assert.equal(metricMb(text, 'nodejs_heap_size_total_bytes'), 60);
    assert.equal(metricMb(text, 'nodejs_external_memory_bytes'), undefined);
    const gc = [
      'nodejs_gc_duration_seconds_sum{kind="minor",service="drives"} 1.25',
      'nodejs_gc_duration_seconds_count{kind="minor",service="drives"} 900',
      'nodejs_gc_duration_seconds_sum{kind="major",service="drives"} 0.5',
    ].join('\n');
    assert.equal(metricSum(gc, 'nodejs_gc_duration_seconds_sum'), 1.75);
  });
});
