import { drivesV1 } from '@mileage/proto';
import { dateToTimestamp } from '@mileage/runtime/formats';

/** A small deterministic PRNG (mulberry32), so every fresh `npm start` seeds the same demo drives. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Region {
  currency: 'USD' | 'CAD' | 'GBP';
  units: 'mi' | 'km';
  /** Reimbursement rate in minor units per distance unit (IRS 70¢/mi, CRA 72¢/km, HMRC 45p/mi). */
  rate: number;
  country: string;
  places: { name: string; state: string; city: string; street: string; postal: string; lat: number; lon: number }[];
}

const REGIONS: Record<string, Region> = {
  US: {
    currency: 'USD',
    units: 'mi',
    rate: 70,
    country: 'US',
    places: [
      {
        name: 'Home',
        state: 'IL',
        city: 'Evanston',
        street: '1204 Maple Ave',
        postal: '60202',
        lat: 42.0451,
        lon: -87.6877,
      },
      {
        name: 'Office',
        state: 'IL',
        city: 'Chicago',
        street: '233 S Wacker Dr',
        postal: '60606',
        lat: 41.8789,
        lon: -87.6359,
      },
      {
        name: 'Acme Supply',
        state: 'IL',
        city: 'Naperville',
        street: '55 Shuman Blvd',
        postal: '60563',
        lat: 41.8042,
        lon: -88.1467,
      },
      {
        name: 'Client HQ',
        state: 'WI',
        city: 'Milwaukee',
        street: '411 E Wisconsin Ave',
        postal: '53202',
        lat: 43.0389,
        lon: -87.9065,
      },
      {
        name: "O'Hare Airport",
        state: 'IL',
        city: 'Chicago',
        street: "10000 W O'Hare Ave",
        postal: '60666',
        lat: 41.9742,
        lon: -87.9073,
      },
    ],
  },
  CA: {
    currency: 'CAD',
    units: 'km',
    rate: 72,
    country: 'CA',
    places: [
      {
        name: 'Home',
        state: 'ON',
        city: 'Toronto',
        street: '88 Queens Quay W',
        postal: 'M5J 0B8',
        lat: 43.6406,
        lon: -79.3801,
      },
      {
        name: 'Office',
        state: 'ON',
        city: 'Mississauga',
        street: '100 City Centre Dr',
        postal: 'L5B 2C9',
        lat: 43.5931,
        lon: -79.6424,
      },
      {
        name: 'Warehouse',
        state: 'ON',
        city: 'Hamilton',
        street: '1 Stelco Rd',
        postal: 'L8H 7N6',
        lat: 43.2557,
        lon: -79.8711,
      },
      {
        name: 'Client Site',
        state: 'ON',
        city: 'Oakville',
        street: '2525 Speers Rd',
        postal: 'L6L 2X9',
        lat: 43.4307,
        lon: -79.7173,
      },
    ],
  },
  GB: {
    currency: 'GBP',
    units: 'mi',
    rate: 45,
    country: 'GB',
    places: [
      {
        name: 'Home',
        state: 'England',
        city: 'London',
        street: '10 Clapham Common S Side',
        postal: 'SW4 9DE',
        lat: 51.4608,
        lon: -0.1439,
      },
      {
        name: 'Office',
        state: 'England',
        city: 'London',
        street: '1 Canada Square',
        postal: 'E14 5AB',
        lat: 51.5049,
        lon: -0.0195,
      },
      {
        name: 'Client',
        state: 'England',
        city: 'Reading',
        street: 'Forbury Rd',
        postal: 'RG1 3JD',
        lat: 51.4584,
        lon: -0.9686,
      },
      {
        name: 'Depot',
        state: 'England',
        city: 'Slough',
        street: 'Bath Rd',
        postal: 'SL1 4DX',
        lat: 51.5105,
        lon: -0.6186,
      },
    ],
  },
};

const PURPOSES = ['Client meeting', 'Site visit', 'Supplies pickup', 'Airport run', 'Training', 'Delivery'];

export interface DemoDriver {
  userId: string;
  region: keyof typeof REGIONS;
  count: number;
}

/** `count` drives over the last 90 days for one driver, oldest first. */
export function demoDrives(driver: DemoDriver, now: Date, seed: number): drivesV1.Drive[] {
  const random = prng(seed);
  const region = REGIONS[driver.region]!;
  const pick = <T>(list: T[]): T => list[Math.floor(random() * list.length)]!;
  const drives: drivesV1.Drive[] = [];
  for (let i = 0; i < driver.count; i++) {
    const daysAgo = 89 - Math.floor((i * 89) / driver.count);
    const start = new Date(now.getTime() - daysAgo * 86_400_000);
    start.setUTCHours(7 + Math.floor(random() * 10), Math.floor(random() * 60), 0, 0);
    const distance = Math.round((3 + random() * 60) * 10) / 10;
    const minutes = Math.round(distance * (1.4 + random()));
    const end = new Date(start.getTime() + minutes * 60_000);
    const from = pick(region.places);
    let to = pick(region.places);
    if (to === from) to = region.places[(region.places.indexOf(from) + 1) % region.places.length]!;
    const roll = random();
    const classification =
      roll < 0.6
        ? drivesV1.Classification.CLASSIFICATION_BUSINESS
        : roll < 0.85
          ? drivesV1.Classification.CLASSIFICATION_PERSONAL
          : drivesV1.Classification.CLASSIFICATION_UNCLASSIFIED;
    const business = classification === drivesV1.Classification.CLASSIFICATION_BUSINESS;
    const location = (p: (typeof region.places)[number], at: Date): drivesV1.Geolocation => ({
      name: p.name,
      lat: p.lat.toFixed(4),
      lon: p.lon.toFixed(4),
      time: dateToTimestamp(at),
      address: { country: region.country, state: p.state, city: p.city, street: p.street, postalCode: p.postal },
    });
    drives.push({
      id: 0,
      userId: driver.userId,
      // The Drives service sets it: the driver's organization, the call's context.
      organizationId: 0,
      startTime: dateToTimestamp(start),
      endTime: dateToTimestamp(end),
      classification,
      distance: {
        amount: distance,
        units: region.units,
        ...(business && random() < 0.2 ? { discounted: Math.floor(distance * 0.8) } : {}),
      },
      ...(business ? { value: { amount: Math.round(distance * region.rate), currency: region.currency } } : {}),
      ...(business && random() < 0.25
        ? { tollFees: { amount: 100 + Math.floor(random() * 900), currency: region.currency } }
        : {}),
      ...(business && random() < 0.2
        ? { parkingFees: { amount: 200 + Math.floor(random() * 1800), currency: region.currency } }
        : {}),
      ...(random() < 0.3 ? { description: `${from.name} to ${to.name}` } : {}),
      entry: random() < 0.75 ? drivesV1.Entry.ENTRY_AUTOMATIC : drivesV1.Entry.ENTRY_MANUAL,
      ...(business ? { purpose: pick(PURPOSES) } : {}),
      start: location(from, start),
      end: location(to, end),
    });
  }
  return drives;
}
