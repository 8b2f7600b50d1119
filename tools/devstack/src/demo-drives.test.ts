import { drivesV1 } from '@mileage/proto';
import { timestampToIso, timestampToMillis } from '@mileage/runtime/formats';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { demoDrives } from './demo-drives';

test('demo drives: 65 per driver over the last 90 days, mixing classifications, entries, fees; deterministic', () => {
  const now = new Date('2026-11-22T12:00:00Z');
  const drives = demoDrives({ userId: 'BobDriver1', region: 'US', count: 65 }, now, 11);
  assert.equal(drives.length, 65);
  for (const d of drives) {
    const start = timestampToMillis(d.startTime!);
    assert.ok(
      now.getTime() - start <= 90 * 86_400_000 && start <= now.getTime() + 86_400_000,
      timestampToIso(d.startTime!),
    );
    assert.ok(timestampToMillis(d.endTime!) > start);
    assert.equal(d.value?.currency ?? 'USD', 'USD');
  }
  const count = (pred: (d: drivesV1.Drive) => boolean) => drives.filter(pred).length;
  assert.ok(count((d) => d.classification === drivesV1.Classification.CLASSIFICATION_BUSINESS) >= 30);
  assert.ok(count((d) => d.classification === drivesV1.Classification.CLASSIFICATION_PERSONAL) > 0);
  assert.ok(count((d) => d.classification === drivesV1.Classification.CLASSIFICATION_UNCLASSIFIED) > 0);
  assert.ok(count((d) => d.entry === drivesV1.Entry.ENTRY_MANUAL) > 0);
  assert.ok(count((d) => d.tollFees !== undefined) > 0);
  assert.ok(count((d) => d.parkingFees !== undefined) > 0);
  assert.deepEqual(demoDrives({ userId: 'BobDriver1', region: 'US', count: 65 }, now, 11), drives);
  const canadian = demoDrives({ userId: 'CarolDrv01', region: 'CA', count: 65 }, now, 22);
  assert.ok(canadian.every((d) => d.distance?.units === 'km' && (d.value?.currency ?? 'CAD') === 'CAD'));
});
