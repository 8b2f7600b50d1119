// The counter of the export parts' worker threads by scheduling class, as Prometheus reads it.
import { Metrics } from '@mileage/runtime/telemetry';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exportWorkerCounter } from './export-handlers';

test("export parts' workers are counted by the class they ran in: idle, or nice_19 where it was refused", async () => {
  const metrics = new Metrics('drives');
  const count = exportWorkerCounter(metrics);
  count(true);
  count(true);
  count(false);
  const { values } = await metrics.registry.getSingleMetric('export_part_workers_total')!.get();
  assert.deepEqual(
    values.map(({ labels, value }) => [labels.scheduling, value]),
    [
      ['idle', 2],
      ['nice_19', 1],
    ],
  );
  // A second service in the same process (tests) shares the counter rather than failing to register it again.
  exportWorkerCounter(metrics)(false);
  assert.equal((await metrics.registry.getSingleMetric('export_part_workers_total')!.get()).values[1]!.value, 2);
});
