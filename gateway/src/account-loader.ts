import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { usersV1 } from '@mileage/proto';
import { isUserId, type CallSettings, type PromiseClient } from '@mileage/runtime';

const MAX_BATCH = 1000;

interface Waiter {
  resolve(user: usersV1.User | undefined): void;
  reject(err: unknown): void;
}

/**
 * Reads caller accounts for /v1 requests, batching the lookups that arrive in the same turn of the event
 * loop into one BatchGetUsers call (the DataLoader pattern). Every request still reads the account after
 * it arrived — nothing is cached across turns — so a deactivation is seen by the next request; under load
 * the gateway makes one gRPC call per turn instead of one per request.
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
    const ids = [...batch.keys()];
    for (let i = 0; i < ids.length; i += MAX_BATCH) {
      const chunk = ids.slice(i, i + MAX_BATCH);
      void this.fetch(chunk, call).then(
        (found) => {
          for (const id of chunk) for (const w of batch.get(id)!) w.resolve(found.get(id));
        },
        (err: unknown) => {
          for (const id of chunk) for (const w of batch.get(id)!) w.reject(err);
        },
      );
    }
  }

  private async fetch(ids: string[], call: CallSettings): Promise<Map<string, usersV1.User>> {
    if (ids.length === 1) {
      try {
        const { user } = await this.users.getUser({ id: ids[0]!, includeDeleted: false }, call);
        return new Map(user ? [[user.id, user]] : []);
      } catch (err) {
        if ((err as Partial<ServiceError>).code === grpcStatus.NOT_FOUND) return new Map();
        throw err;
      }
    }
    const { users } = await this.users.batchGetUsers({ ids }, call);
    return new Map(users.map((u) => [u.id, u]));
  }
}
