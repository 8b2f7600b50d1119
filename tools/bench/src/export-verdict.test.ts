// bench:export's verdict: phase times from the polls, the ratios, each check met and missed, the exit status.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  p99ByPhase,
  phasesWithDownload,
  erasureChecks,
  exportChecks,
  exportExitStatus,
  manifestRows,
  p99Ratio,
  perSecond,
  phaseSeconds,
  rssGrowth,
  coresByPhase,
} from './export-verdict';

const T0 = 1_764_400_000_000;
const phases = [
  { phase: 'queued', wallMs: T0 + 100, rows: 0 },
  { phase: 'users', wallMs: T0 + 300, rows: 0 },
  { phase: 'reported_drives', wallMs: T0 + 1_500, rows: 1000 },
  { phase: 'archive', wallMs: T0 + 11_500, rows: 201_000 },
  { phase: 'completed', wallMs: T0 + 13_000, rows: 201_000 },
];

describe('the phases of an export as polled', () => {
  it('times a phase from when it was first seen to when the next one was', () => {
    assert.equal(phaseSeconds(phases, 'reported_drives'), 10);
    assert.equal(phaseSeconds(phases, 'archive'), 1.5);
  });

  it('knows no time for a phase never seen, nor for the last one seen', () => {
    assert.equal(phaseSeconds(phases, 'webhooks'), undefined);
    assert.equal(phaseSeconds(phases, 'completed'), undefined);
  });
});

describe('rates and ratios', () => {
  it('gives rows per second, and 0 without a time', () => {
    assert.equal(perSecond(100_000, 4), 25_000);
    assert.equal(perSecond(100_000, undefined), 0);
    assert.equal(perSecond(100_000, 0), 0);
  });

  it('takes a quiet p99 below 1 ms as 1 ms', () => {
    assert.equal(p99Ratio(20, 30), 1.5);
    assert.equal(p99Ratio(0.4, 3), 3);
  });

  it("reads a file's rows from the manifest, 0 for a file it does not list", () => {
    const manifest = { format: 'mileage-export/1', files: [{ name: 'users.jsonl', rows: 7, sha256: 'x' }] };
    assert.equal(manifestRows(manifest, 'users.jsonl'), 7);
    assert.equal(manifestRows(manifest, 'groups.jsonl'), 0);
  });

  it("takes each process's growth as its highest reading less its reading before, never below 0", () => {
    assert.deepEqual(rssGrowth({ gateway: 100, users: 120, drives: 90 }, { gateway: 150, users: 110 }), {
      gateway: 50,
      users: 0,
      drives: 0,
    });
  });
});

describe("the other organization's p99 by phase", () => {
  it('takes each phase its own responses, from its first sighting to the next, by nearest rank', () => {
    // 200 responses in the Drives phase: 198 fast, 2 slow (the 99th percentile is the 198th, fast); 100 in the archive
    // phase: 98 fast, 2 slow (the 99th is the 99th, slow); none while queued or in the Users phase but one.
    const responses: [number, number][] = [
      [T0 + 400, 30],
      ...Array.from({ length: 200 }, (_, i): [number, number] => [T0 + 1_500 + i * 50, i < 198 ? 20 : 900]),
      ...Array.from({ length: 100 }, (_, i): [number, number] => [T0 + 11_500 + i * 10, i < 98 ? 25 : 700]),
      [T0 + 13_000, 5_000],
    ];
    assert.deepEqual(p99ByPhase(responses, phases), [
      { phase: 'users', p99Ms: 30, responses: 1 },
      { phase: 'reported_drives', p99Ms: 20, responses: 200 },
      { phase: 'archive', p99Ms: 700, responses: 100 },
    ]);
  });

  it('counts the download as a phase of its own, from completion to its end', () => {
    const responses: [number, number][] = [
      [T0 + 12_000, 25],
      [T0 + 13_500, 400],
      [T0 + 16_000, 9_000],
    ];
    assert.deepEqual(p99ByPhase(responses, phasesWithDownload({ phases, downloadedWallMs: T0 + 15_000 })), [
      { phase: 'archive', p99Ms: 25, responses: 1 },
      { phase: 'download', p99Ms: 400, responses: 1 },
    ]);
  });
});

describe('the cores of each phase', () => {
  const phases = [
    { phase: 'users', wallMs: T0, rows: 0 },
    { phase: 'reported_drives', wallMs: T0 + 1_010, rows: 0 },
    { phase: 'archive', wallMs: T0 + 1_050, rows: 0 },
    { phase: 'completed', wallMs: T0 + 3_000, rows: 0 },
  ];
  // Readings every 200 ms from T0 - 100: drives busy 1 core until T0 + 1,100 then 0.5; users 0.25 throughout, and a
  // backend that appears at T0 + 2,000, 1 core from then on. reported_drives lies between two readings.
  const readings = Array.from({ length: 17 }, (_, i) => {
    const atMs = T0 - 100 + i * 200;
    const t = (atMs - (T0 - 100)) / 1000;
    const drives = Math.min(t, 1.2) + 0.5 * Math.max(0, t - 1.2);
    const backend = atMs >= T0 + 2_000 ? (atMs - (T0 + 2_000)) / 1000 : undefined;
    return { atMs, used: { drives, users: 0.25 * t, ...(backend === undefined ? {} : { 'pg:drives': backend }) } };
  });
  const rounded = (cores: Record<string, number>) =>
    Object.fromEntries(Object.entries(cores).map(([name, c]) => [name, Math.round(c * 100) / 100]));

  it("sets each process's CPU over the readings nearest a phase's bounds, and leaves out a phase they do not resolve", () => {
    const byPhase = coresByPhase(readings, phases);
    assert.deepEqual(
      byPhase.map((p) => p.phase),
      ['users', 'archive'],
    );
    assert.equal(byPhase[0]!.seconds, 1.2);
    assert.deepEqual(rounded(byPhase[0]!.cores), { drives: 1, users: 0.25 });
    assert.equal(byPhase[1]!.seconds, 1.8);
    // The backend's 0.9 s from T0 + 2,000 over the phase's 1.8 s.
    assert.deepEqual(rounded(byPhase[1]!.cores), { drives: 0.5, users: 0.25, 'pg:drives': 0.5 });
  });

  it('gives nothing without readings', () => {
    assert.deepEqual(coresByPhase([], phases), []);
  });
});

describe('the checks', () => {
  it('meets the targets at their bounds', () => {
    assert.deepEqual(exportChecks({ rssGrowthMb: { users: 100 }, copyRatio: 0.3, p99Ratio: 1.5 }), {
      'export RSS growth users': true,
      'export rows/s vs COPY': true,
      'export: other organization p99': true,
    });
    assert.deepEqual(erasureChecks({ p99Ratio: 1.5 }), { 'erasure: other organization p99': true });
  });

  it('misses each past its bound', () => {
    assert.deepEqual(exportChecks({ rssGrowthMb: { users: 100.5, drives: 3 }, copyRatio: 0.29, p99Ratio: 1.51 }), {
      'export RSS growth users': false,
      'export RSS growth drives': true,
      'export rows/s vs COPY': false,
      'export: other organization p99': false,
    });
    assert.deepEqual(erasureChecks({ p99Ratio: 2 }), { 'erasure: other organization p99': false });
  });
});

describe('the exit status', () => {
  it('fails on a failed request or step, smoke or not', () => {
    assert.equal(exportExitStatus(1, 0, true), 1);
    assert.equal(exportExitStatus(1, 0, false), 1);
  });

  it('fails on a missed target at full size only', () => {
    assert.equal(exportExitStatus(0, 2, false), 1);
    assert.equal(exportExitStatus(0, 2, true), 0);
    assert.equal(exportExitStatus(0, 0, false), 0);
  });
});
