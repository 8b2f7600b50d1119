import { usersV1 } from '@mileage/proto';
import { isUserId } from '@mileage/runtime/formats';
import { PerTurnGroups } from '@mileage/runtime/database';
import { type CallSettings, type PromiseClient, MAX_BATCH_GET_USERS, slices } from '@mileage/runtime/grpc';

interface Waiter {
  resolve(user: usersV1.User | undefined): void;
  reject(err: unknown): void;
}

/** The lookups of one turn that act in one scope: an organization, or none (the callers' own accounts). */
interface Batch {
  /** The first lookup's settings: it lends its request id, trace and organization to the shared calls. */
  call: CallSettings;
  waiters: Map<string, Waiter[]>;
}

/**
 * Reads users for /v1 requests, batching the lookups of one turn of the event loop (the DataLoader pattern). Every
 * request still reads after it arrived — nothing is cached across turns — so a deactivation is seen by the next
 * request. One BatchGetUsers per scope and turn:
 * - the callers' own accounts are read without an organization (each one's organization is what the answer tells):
 *   the one read the Users service answers across organizations;
 * - users read inside an organization (a page's drivers) share one call per organization, which finds nothing of
 *   another organization.
 * Each loader reads one view of its users: by default what a request needs of its caller's account (USER_VIEW_ACCOUNT:
 * profile, status, organization, admin flag; not the SCIM documents, times and version), USER_VIEW_DRIVER for a
 * page's drivers.
 */
export class AccountLoader {
  private readonly turns = new PerTurnGroups<Batch>((batches) => this.flush(batches));
  /**
   * The organization of each user read lately (a user's organization never changes): what a request's share of a
   * replica is counted against before its account is read (fair-share.ts). Bounded; the oldest read leave first.
   */
  private readonly organizations = new Map<string, number>();

  constructor(
    private readonly users: PromiseClient<usersV1.UsersServiceClient>,
    private readonly view = usersV1.UserView.USER_VIEW_ACCOUNT,
  ) {}

  /** The live (not deleted) user in this loader's view, or undefined when there is none; rejects with the gRPC error otherwise. */
  load(userId: string, call: CallSettings): Promise<usersV1.User | undefined> {
    if (!isUserId(userId)) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      const batch = this.turns.of(call.organizationId, () => ({ call, waiters: new Map() }));
      const waiters = batch.waiters.get(userId);
      if (waiters) waiters.push({ resolve, reject });
      else batch.waiters.set(userId, [{ resolve, reject }]);
    });
  }

  /** The organization a user read before belongs to; undefined for one not read lately. */
  knownOrganization(userId: string): number | undefined {
    return this.organizations.get(userId);
  }

  private remember(user: usersV1.User): void {
    if (!(user.organizationId > 0) || this.organizations.has(user.id)) return;
    this.organizations.set(user.id, user.organizationId);
    if (this.organizations.size > REMEMBERED_ORGANIZATIONS) {
      const oldest = this.organizations.keys().next().value;
      if (oldest !== undefined) this.organizations.delete(oldest);
    }
  }

  private flush(batches: Batch[]): void {
    for (const { call, waiters } of batches) {
      for (const chunk of slices([...waiters.keys()], MAX_BATCH_GET_USERS))
        void this.fetch(chunk, call).then(
          (found) => {
            for (const id of chunk) for (const w of waiters.get(id)!) w.resolve(found.get(id));
          },
          (err: unknown) => {
            for (const id of chunk) for (const w of waiters.get(id)!) w.reject(err);
          },
        );
    }
  }

  private async fetch(ids: string[], call: CallSettings): Promise<Map<string, usersV1.User>> {
    const { users } = await this.users.batchGetUsers({ ids, view: this.view }, call);
    for (const user of users) this.remember(user);
    return new Map(users.map((u) => [u.id, u]));
  }
}

/** Users whose organization a loader remembers (a few MB at most). */
const REMEMBERED_ORGANIZATIONS = 100_000;
