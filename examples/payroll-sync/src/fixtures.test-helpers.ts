import type { ReportedDrive } from '@mileage/client';

/** A reported drive as the API answers it (CONTRACT §2), with `overrides` on top. */
export function reportedDrive(id: number, modified: string, overrides: Partial<ReportedDrive> = {}): ReportedDrive {
  const place = (name: string, time: string) => ({ name, lat: '51.5', lon: '-0.12', time, address: null });
  return {
    id: String(id),
    driver: { id: 'BobDriver1', name: 'Bob Driver', email: 'bob@example.com', status: 'active', timezone_offset: 0 },
    details: {
      distance: { amount: 12.5, units: 'mi', discounted: 10 },
      value: { amount: 725, currency: 'USD' },
      toll_fees: { amount: 250, currency: 'USD' },
      parking_fees: null,
      description: 'Client visit',
      entry: 'manual',
      classification: 'business',
      purpose: 'Meeting',
      start: place('Office', '2026-11-01T08:00:00.000Z'),
      end: place('Client', '2026-11-01T08:40:00.000Z'),
    },
    created: '2026-11-01T09:00:00.000Z',
    modified,
    status: 'submitted',
    review_comments: [],
    ...overrides,
  };
}
