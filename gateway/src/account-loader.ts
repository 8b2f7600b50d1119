import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { usersV1 } from '@mileage/proto';
import { isUserId, type CallSettings, type PromiseClient } from '@mileage/runtime';

interface Waiter {
  resolve(user: usersV1.User | undefined): void;
  reject(err: unknown): void;
}

/**
 * Reads caller accounts for /v1 requests: the requests of one turn of the event loop that name the same user share
 * one GetUser call (the DataLoader pattern). Every request still reads the account after it arrived — nothing is
 * cached across turns — so a deactivation is seen by the next request. GetUser, not BatchGetUsers: only GetUser may
 * be asked without an organization (the caller's organization is what the answer tells), and the callers of one turn
 * may belong to different organizations.
 */
export class AccountLoader {
  private pending = new Map<string, Waiter[]>();
  private batchCall: CallSettings | undefined;

  constructor(private readonly users: PromiseClient<usersV1.UsersServiceClient>) {}

  /** The live (not deleted) user, or undefined when there is none; rejects with the gRPC error otherwise. */
  load(userId: string, call: CallSettings): Promise<usersV1.User | undefined> {
    if (!isUserId(userId)) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      const waiters = this.pending.get(userId);
      if (waiters) waiters.push({ resolve, reject });
      else this.pending.set(userId, [{ resolve, reject }]);
      if (this.batchCall === undefined) {
        // The first request of the turn lends its request id and trace to the shared call.
        this.batchCall = call;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const batch = this.pending;
    const call = this.batchCall!;
    this.pending = new Map();
    this.batchCall = undefined;
    for (const [id, waiters] of batch)
      void this.fetch(id, call).then(
        (user) => {
          for (const w of waiters) w.resolve(user);
        },
        (err: unknown) => {
          for (const w of waiters) w.reject(err);
        },
      );
  }

  private async fetch(id: string, call: CallSettings): Promise<usersV1.User | undefined> {
    try {
      return (await this.users.getUser({ id, includeDeleted: false }, call)).user;
    } catch (err) {
      if ((err as Partial<ServiceError>).code === grpcStatus.NOT_FOUND) return undefined;
      throw err;
    }
  }
}
