import type { usersV1 } from '@mileage/proto';
import { PerTurnGroups } from '@mileage/runtime/database';
import { type CallSettings, type PromiseClient, MAX_BATCH_GET_USERS, slices } from '@mileage/runtime/grpc';

type Found = usersV1.User | undefined;

interface Waiter {
  resolve(user: Found): void;
  reject(err: unknown): void;
}

/** The reads of one turn that may share a call: same organization, same end-user context. */
interface Batch {
  /** The first read's settings: it lends its request id and trace to the shared calls. */
  call: CallSettings;
  ids: Map<string, Waiter[]>;
  userNames: Map<string, Waiter[]>;
}

/** Reads act together only for one organization under one end-user context, which the owner checks per call. */
const batchKey = (call: CallSettings) =>
  `${call.organizationId ?? ''}\n${call.endUser?.token ?? ''}\n${call.endUser?.cert ?? ''}`;

function enqueue(waiting: Map<string, Waiter[]>, key: string, waiter: Waiter): void {
  const waiters = waiting.get(key);
  if (waiters) waiters.push(waiter);
  else waiting.set(key, [waiter]);
}

/**
 * The SCIM service's reads of live users by id (GET, and the read before every PUT, PATCH and DELETE) and by userName
 * (the `userName eq` lookup an identity provider sends before each change), batched per turn of the event loop as
 * the gateway batches its account reads: an identity provider's sync cycle sends many at once, and each would
 * otherwise be a gRPC call and a transaction of its own in the Users service. Nothing is kept across turns: every
 * read happens after its request arrived, so the read before a write sees the latest version. Reads share a call
 * only within one organization and one end-user context (the gateway signs one per provisioning client and
 * organization, so one identity provider's concurrent lookups share theirs).
 */
export class UserReads {
  private readonly turns = new PerTurnGroups<Batch>((batches) => this.flush(batches));

  constructor(private readonly users: PromiseClient<usersV1.UsersServiceClient>) {}

  /** The live user `id` of the call's organization, or undefined; rejects with the gRPC error of the shared call. */
  byId(id: string, call: CallSettings): Promise<Found> {
    return new Promise((resolve, reject) => enqueue(this.batchFor(call).ids, id, { resolve, reject }));
  }

  /** The live user of the call's organization whose userName is `userName` case-insensitively, or undefined. */
  byUserName(userName: string, call: CallSettings): Promise<Found> {
    return new Promise((resolve, reject) => enqueue(this.batchFor(call).userNames, userName, { resolve, reject }));
  }

  private batchFor(call: CallSettings): Batch {
    return this.turns.of(batchKey(call), () => ({ call, ids: new Map(), userNames: new Map() }));
  }

  private flush(batches: Batch[]): void {
    for (const { call, ids, userNames } of batches) {
      for (const chunk of slices([...ids.keys()], MAX_BATCH_GET_USERS))
        settle(chunk, ids, async () => {
          const { users } = await this.users.batchGetUsers({ ids: chunk }, call);
          const byId = new Map(users.map((u) => [u.id, u]));
          return chunk.map((id) => byId.get(id));
        });
      for (const chunk of slices([...userNames.keys()], MAX_BATCH_GET_USERS))
        settle(chunk, userNames, async () => {
          const { matches } = await this.users.batchFindUsersByUserName({ userNames: chunk }, call);
          const found: Found[] = new Array(chunk.length).fill(undefined);
          for (const { index, user } of matches) found[index] = user;
          return found;
        });
    }
  }
}

/** Answers every waiter of `keys` from one call: its answer in the order of `keys`, or its error. */
function settle(keys: string[], waiting: Map<string, Waiter[]>, read: () => Promise<Found[]>): void {
  void read().then(
    (found) => keys.forEach((key, i) => waiting.get(key)!.forEach((w) => w.resolve(found[i]))),
    (err: unknown) => keys.forEach((key) => waiting.get(key)!.forEach((w) => w.reject(err))),
  );
}
