import type { usersV1 } from '@mileage/proto';
import { eraseOrganizationBatches } from '@mileage/runtime/database';
import { errors, type Handlers, isOrganizationId } from '@mileage/runtime/grpc';
import { ERASURE_PLAN } from './erasure-plan';
import { deleteExportsOfErasedOrganization } from './export-job';
import { DEFAULT_BACKUPS_HOLD_DAYS, DEFAULT_GRACE_DAYS, OffboardingRepository } from './offboarding-repo';
import type { UsersServerDeps } from './organization-context';
import { SCHEMA } from './database';

export type OffboardingHandlers = Pick<
  Handlers<usersV1.OrganizationsServiceServer>,
  | 'offboardOrganization'
  | 'cancelOffboarding'
  | 'getOffboarding'
  | 'listDueErasures'
  | 'startErasure'
  | 'eraseOrganization'
  | 'finishErasure'
>;

/** The longest grace period an operator may give (ten years: a typing error, not a policy). */
const MAX_GRACE_DAYS = 3650;

function organizationOf(request: { organizationId: number }): number {
  if (!isOrganizationId(request.organizationId))
    throw errors.invalidArgument('organization_id must be an organization id', [
      { field: 'organization_id', description: 'a positive integer' },
    ]);
  return request.organizationId;
}

const notOffboarding = (id: number) =>
  errors.notFound(`organization ${id} is not being offboarded`, 'OFFBOARDING_NOT_FOUND');

/**
 * Offboarding (docs/operations.md, "Data lifecycle"): the Users service owns the organizations, so it keeps their
 * suspension and, after the erasure, the receipt. The operator's command carries the erasure to the other owners.
 */
export function offboardingHandlers(deps: UsersServerDeps): OffboardingHandlers {
  const offboardings = new OffboardingRepository(deps.knex);
  const backupsHoldDays = deps.erasureBackupsHoldDays ?? DEFAULT_BACKUPS_HOLD_DAYS;

  async function started(id: number): Promise<usersV1.Offboarding> {
    const offboarding = await offboardings.get(id);
    if (!offboarding) throw notOffboarding(id);
    if (!offboarding.erasureStartedAt)
      throw errors.failedPrecondition(`the erasure of organization ${id} has not started`, 'ERASURE_NOT_STARTED');
    return offboarding;
  }

  /** Erases a batch of the organization's rows, its exports' archives first (their keys are in the rows). */
  async function eraseOwnRows(id: number, maxBatches: number) {
    if (deps.archives) await deleteExportsOfErasedOrganization(deps.knex, deps.archives, id);
    return eraseOrganizationBatches(deps.knex, ERASURE_PLAN, id, maxBatches);
  }

  return {
    async offboardOrganization(request) {
      const id = organizationOf(request);
      const graceDays = request.now ? 0 : (request.graceDays ?? DEFAULT_GRACE_DAYS);
      if (!Number.isInteger(graceDays) || graceDays < 0 || graceDays > MAX_GRACE_DAYS)
        throw errors.invalidArgument(`grace_days must be 0 to ${MAX_GRACE_DAYS}`, [
          { field: 'grace_days', description: `0 to ${MAX_GRACE_DAYS}` },
        ]);
      const offboarding = await offboardings.start(id, graceDays);
      if (offboarding) return { offboarding, scimTokenIds: await offboardings.activeScimTokenIds(id) };
      if (await offboardings.get(id))
        throw errors.failedPrecondition(`organization ${id} is already being offboarded`, 'ALREADY_OFFBOARDING');
      throw errors.notFound(`organization ${id} not found`, 'ORGANIZATION_NOT_FOUND');
    },

    async cancelOffboarding(request) {
      const id = organizationOf(request);
      const offboarding = await offboardings.cancel(id);
      if (offboarding) return { offboarding };
      if (await offboardings.get(id))
        throw errors.failedPrecondition(
          `the erasure of organization ${id} has started: it can no longer be cancelled`,
          'ERASURE_STARTED',
        );
      throw notOffboarding(id);
    },

    async getOffboarding(request) {
      const id = organizationOf(request);
      const offboarding = await offboardings.get(id);
      if (!offboarding) throw notOffboarding(id);
      return { offboarding };
    },

    async listDueErasures() {
      return { organizationIds: await offboardings.due() };
    },

    async startErasure(request) {
      const id = organizationOf(request);
      const offboarding = await offboardings.markStarted(id);
      if (!offboarding) throw notOffboarding(id);
      if (!offboarding.erasureStartedAt)
        throw errors.failedPrecondition(`the grace period of organization ${id} is not over`, 'GRACE_PERIOD');
      return { offboarding };
    },

    async eraseOrganization(request) {
      const id = organizationOf(request);
      await started(id);
      const maxBatches = Math.max(1, Math.min(request.maxBatches, 1000));
      return eraseOwnRows(id, maxBatches);
    },

    async finishErasure(request) {
      const id = organizationOf(request);
      const offboarding = await started(id);
      if (offboarding.erasureFinishedAt) return { offboarding };
      const own = await eraseOwnRows(id, 1);
      if (!own.done)
        throw errors.failedPrecondition(`rows of organization ${id} remain in ${SCHEMA}`, 'ERASURE_NOT_DONE');
      const erasedRows = { ...request.erasedRows };
      for (const [table, rows] of Object.entries(own.erasedRows)) erasedRows[`${SCHEMA}.${table}`] = rows;
      await offboardings.finish(id, erasedRows, backupsHoldDays);
      return { offboarding: (await offboardings.get(id))! };
    },
  };
}
