// The operator's side of offboarding (`npm run org -- offboard …`, docs/operations.md "Data lifecycle"): the Users
// service keeps the suspension, the schedule and the receipt; this carries the erasure to every owner over gRPC, the
// other owners first and the Users service (whose organization row is the organization) last, then asks the Users
// service to record the receipt.
import type { drivesV1, groupsV1, usersV1, webhooksV1 } from '@mileage/proto';
import { DutyCycle } from '@mileage/runtime/database';
import type { PromiseClient } from '@mileage/runtime/grpc';

/**
 * The batches (of at most 1,000 rows) one EraseOrganization call may erase: well inside a call's deadline, and short
 * enough that the pauses between calls (ERASURE_DUTY_CYCLE) come often.
 */
export const BATCHES_PER_CALL = 5;
/**
 * The share of the wall time the erasure works: it is background work beside every other organization's requests on
 * the same cores and database, so after each call it pauses as long as the call took (DutyCycle).
 */
export const ERASURE_DUTY_CYCLE = 0.5;

export interface OffboardingClients {
  organizations: PromiseClient<usersV1.OrganizationsServiceClient>;
  /** The Webhooks service, told to pause the organization's deliveries while it is suspended. */
  webhooks: PromiseClient<webhooksV1.WebhooksServiceClient>;
  /** The other owners of an organization's rows, by schema, erased in this order before the Users service. */
  owners: Record<
    string,
    PromiseClient<groupsV1.GroupsServiceClient | drivesV1.DrivesServiceClient | webhooksV1.WebhooksServiceClient>
  >;
}

type Eraser = (request: {
  organizationId: number;
  maxBatches: number;
}) => Promise<{ erasedRows: Record<string, number>; done: boolean }>;

/** Calls an owner's EraseOrganization until it is done; the rows it erased per table. */
async function eraseAt(erase: Eraser, organizationId: number, cycle: DutyCycle, progress: (rows: number) => void) {
  for (;;) {
    const { erasedRows, done } = await erase({ organizationId, maxBatches: BATCHES_PER_CALL });
    progress(Object.values(erasedRows).reduce((sum, n) => sum + n, 0));
    if (done) return erasedRows;
    await cycle.pace();
  }
}

/**
 * Erases an offboarded organization whose grace period is over, everywhere, and answers its receipt. Resumable: a run
 * after a failure or a kill continues with what is left; a run after the end answers the same receipt. Paced to
 * `dutyCycle` of the wall time.
 */
export async function eraseOffboarded(
  clients: OffboardingClients,
  organizationId: number,
  log: (line: string) => void = () => {},
  dutyCycle = ERASURE_DUTY_CYCLE,
): Promise<usersV1.Offboarding> {
  const { offboarding } = await clients.organizations.startErasure({ organizationId });
  if (offboarding!.erasureFinishedAt) return offboarding!;
  const cycle = new DutyCycle(dutyCycle);
  const erasedRows: Record<string, number> = {};
  for (const [schema, owner] of Object.entries(clients.owners)) {
    const erase = (owner as { eraseOrganization: Eraser }).eraseOrganization.bind(owner);
    const rows = await eraseAt(erase, organizationId, cycle, (n) => log(`${schema}: ${n} rows erased`));
    for (const [table, n] of Object.entries(rows)) erasedRows[`${schema}.${table}`] = n;
  }
  const own = clients.organizations.eraseOrganization.bind(clients.organizations);
  await eraseAt(own, organizationId, cycle, (n) => log(`users: ${n} rows erased`));
  const { offboarding: receipt } = await clients.organizations.finishErasure({ organizationId, erasedRows });
  return receipt!;
}

/** The offboarding as the operator reads it: one line per fact, counts per table; no names or e-mail addresses. */
export function describeOffboarding(offboarding: usersV1.Offboarding): string {
  const time = (t?: { seconds: number; nanos: number }) =>
    t ? new Date(t.seconds * 1000 + Math.floor(t.nanos / 1e6)).toISOString() : undefined;
  const state = offboarding.erasureFinishedAt
    ? 'erased'
    : offboarding.erasureStartedAt
      ? 'erasing'
      : 'suspended (grace period)';
  const lines = [
    `organization ${offboarding.organizationId}: ${state}`,
    `  offboarded:          ${time(offboarding.requestedAt)}`,
    `  erasure after:       ${time(offboarding.eraseAfter)}`,
  ];
  if (offboarding.erasureStartedAt) lines.push(`  erasure started:     ${time(offboarding.erasureStartedAt)}`);
  if (offboarding.erasureFinishedAt) {
    lines.push(`  erasure finished:    ${time(offboarding.erasureFinishedAt)}`);
    lines.push(`  no backup holds it after: ${time(offboarding.backupsHoldUntil)}`);
    lines.push('  rows erased:');
    for (const [table, rows] of Object.entries(offboarding.erasedRows).sort(([a], [b]) => a.localeCompare(b)))
      lines.push(`    ${table.padEnd(34)} ${rows}`);
  }
  return lines.join('\n');
}
