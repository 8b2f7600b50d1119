import { groupsV1, usersV1 } from '@mileage/proto';
import type { Knex, Logger, PromiseClient } from '@mileage/runtime';
import { randomUUID } from 'node:crypto';
import { isDefinitiveFailure, scimErrors } from './errors';
import type { Doc } from './resource';

export type ResourceType = 'User' | 'Group';

/** SCIM-side state that changes with a write, applied in the same transaction as its audit entry. */
export interface SideEffects {
  /** The user's attributes kept here; null deletes them. */
  userAttributes?: Doc | null;
  /** The group's externalId; null clears it. */
  groupExternalId?: string | null;
}

export interface WriteIntent {
  actor: string;
  operation: 'create' | 'replace' | 'patch' | 'delete';
  resourceType: ResourceType;
  /** Unknown before a create without an id; the settled write names it. */
  resourceId?: string;
  requestId?: string;
  before?: Doc;
  after?: Doc;
  sideEffects: SideEffects;
}

/** What the owner service says about a write id (ResolveWrite), for recovery. */
export type Resolver = (writeId: string) => Promise<{ applied: false } | { applied: true; resourceId: string }>;

/** The right to write one resource, held by one request at a time across replicas (see WriteJournal.exclusive). */
export interface WriteSlot {
  readonly writeId: string;
}

export type SlotClaim = Pick<WriteIntent, 'actor' | 'operation' | 'resourceType' | 'requestId'> & {
  resourceId: string;
};

export interface JournalOptions {
  /** An intent older than this is presumed abandoned by a crashed process and settled by recovery. */
  recoveryAfterMs?: number;
  /** How long a write waits for the one before it on the same resource before answering 503. */
  slotWaitMs?: number;
  faults?: JournalFaults;
}

export interface JournalFaults {
  /** Test hook: runs after the owner applied the write and before it is settled here (a crash at the worst moment). */
  afterOwnerWrite?(): void;
}

interface PendingRow {
  write_id: string;
  actor: string;
  operation: WriteIntent['operation'];
  resource_type: ResourceType;
  resource_id: string | null;
  request_id: string | null;
  before: Doc | null;
  after: Doc | null;
  side_effects: SideEffects;
  target_version: number | null;
}

const ONE_WRITE_PER_RESOURCE = 'pending_writes_one_per_resource';
const isSlotTaken = (err: unknown) =>
  (err as { code?: string; constraint?: string }).code === '23505' &&
  (err as { constraint?: string }).constraint === ONE_WRITE_PER_RESOURCE;

/**
 * Makes each provisioning change and its audit entry one outcome across two services. The intent is written
 * here first; the owner applies the write under the intent's id in its own transaction and records that id;
 * then the audit entry and SCIM-side state are written and the intent removed, in one transaction here. If
 * this process dies in between, recovery asks the owner about the id: applied writes are audited (marked
 * recovered), unapplied ones are fenced so they can never apply, and dropped.
 *
 * At most one intent exists per resource (a unique index), so the writes to one resource are serialised across
 * replicas: a request takes the slot before it reads, and so computes its change from the SCIM-side state of
 * every earlier write, settled. Without that, a read between another write's owner call and its settling sees
 * the owner's new version with the old SCIM-side attributes, and the next write silently drops them.
 */
export class WriteJournal {
  private readonly recoveryAfterMs: number;
  private readonly slotWaitMs: number;
  private readonly faults: JournalFaults;

  constructor(
    private readonly knex: Knex,
    private readonly resolvers: Record<ResourceType, Resolver>,
    private readonly logger: Logger,
    options: JournalOptions = {},
  ) {
    this.recoveryAfterMs = options.recoveryAfterMs ?? 30_000;
    this.slotWaitMs = options.slotWaitMs ?? 2_000;
    this.faults = options.faults ?? {};
  }

  /** Runs `work` holding the resource's write slot; `work` reads, decides, and may `perform` under the slot once. */
  async exclusive<T>(claim: SlotClaim, work: (slot: WriteSlot) => Promise<T>): Promise<T> {
    const slot: WriteSlot = { writeId: randomUUID() };
    await this.insertIntent(slot.writeId, claim);
    try {
      return await work(slot);
    } finally {
      // No owner write was attempted (no change, a refused precondition, bad input): give the slot back. An
      // attempted one has its target version; settling or recovery removes that row, never this.
      await this.knex('pending_writes').where({ write_id: slot.writeId }).whereNull('target_version').delete();
    }
  }

  /** The SCIM-side attributes of these users as of the versions given (see stateAsOf). */
  async userAttributes(users: { id: string; version: number }[]): Promise<Map<string, Doc>> {
    return this.stateAsOf(
      'User',
      users,
      (e) => e.userAttributes,
      async (ids) => {
        const rows = (await this.knex('user_attributes').select('user_id', 'attributes').whereIn('user_id', ids)) as {
          user_id: string;
          attributes: Doc;
        }[];
        return new Map(rows.map((r) => [r.user_id.trim(), r.attributes]));
      },
    );
  }

  /** The externalIds of these groups as of the versions given (see stateAsOf). */
  async groupExternalIds(groups: { id: number; version: number }[]): Promise<Map<string, string>> {
    return this.stateAsOf(
      'Group',
      groups.map((g) => ({ id: String(g.id), version: g.version })),
      (e) => e.groupExternalId,
      async (ids) => {
        const rows = (await this.knex('group_attributes')
          .select('group_id', 'external_id')
          .whereIn('group_id', ids)
          .whereNotNull('external_id')) as { group_id: string; external_id: string }[];
        return new Map(rows.map((r) => [String(r.group_id), r.external_id]));
      },
    );
  }

  /**
   * SCIM-side state as of each resource's owner version: the settled state, unless a write the owner has applied
   * (its target version is the one read) is not settled yet; then that write's state, so that a reader never
   * pairs the new version with the old attributes.
   */
  private async stateAsOf<V>(
    resourceType: ResourceType,
    resources: { id: string; version: number }[],
    effectOf: (effects: SideEffects) => V | null | undefined,
    settled: (ids: string[]) => Promise<Map<string, V>>,
  ): Promise<Map<string, V>> {
    if (resources.length === 0) return new Map();
    const ids = resources.map((r) => r.id);
    const [state, pending] = await Promise.all([
      settled(ids),
      this.knex('pending_writes')
        .select('resource_id', 'target_version', 'side_effects')
        .where({ resource_type: resourceType })
        .whereIn('resource_id', ids)
        .whereNotNull('target_version') as Promise<
        Pick<PendingRow, 'resource_id' | 'target_version' | 'side_effects'>[]
      >,
    ]);
    const versionOf = new Map(resources.map((r) => [r.id, r.version]));
    for (const row of pending) {
      const effect = effectOf(row.side_effects);
      if (effect === undefined || Number(row.target_version) !== versionOf.get(row.resource_id!)) continue;
      if (effect === null) state.delete(row.resource_id!);
      else state.set(row.resource_id!, effect);
    }
    return state;
  }

  /** Inserts an intent, waiting while another request holds the resource's slot (and recovering an abandoned one). */
  private async insertIntent(
    writeId: string,
    intent: Partial<WriteIntent> & Pick<WriteIntent, 'actor' | 'operation' | 'resourceType'>,
    targetVersion?: number,
  ): Promise<void> {
    const row = {
      write_id: writeId,
      actor: intent.actor,
      operation: intent.operation,
      resource_type: intent.resourceType,
      resource_id: intent.resourceId ?? null,
      request_id: intent.requestId ?? null,
      before: intent.before ? JSON.stringify(intent.before) : null,
      after: intent.after ? JSON.stringify(intent.after) : null,
      side_effects: JSON.stringify(intent.sideEffects ?? {}),
      target_version: targetVersion ?? null,
    };
    const giveUpAt = Date.now() + this.slotWaitMs;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.knex('pending_writes').insert(row);
        return;
      } catch (err) {
        if (!isSlotTaken(err)) throw err;
      }
      const holder = (await this.knex('pending_writes')
        .select(this.knex.raw('extract(epoch from now() - created_at) * 1000 AS age_ms'))
        .where({ resource_type: row.resource_type, resource_id: row.resource_id })
        .first()) as { age_ms: string } | undefined;
      if (holder && Number(holder.age_ms) > this.recoveryAfterMs) {
        await this.recover(this.recoveryAfterMs);
        continue;
      }
      if (Date.now() >= giveUpAt) {
        throw scimErrors.unavailable('Another change to this resource is still in progress; try again shortly', 1);
      }
      // Back off with jitter; the holder normally settles within one owner round trip.
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, 2 ** attempt) + Math.random() * 5));
    }
  }

  /**
   * Records the intent and makes the owner write under its id; `slot` when the request holds the resource's slot,
   * `targetVersion` the owner version the write produces (for readers before it is settled).
   */
  async perform<R>(
    intent: WriteIntent,
    ownerWrite: (writeId: string) => Promise<R>,
    settled: (result: R) => { resourceId: string; after?: Doc },
    held?: { slot: WriteSlot; targetVersion: number },
  ): Promise<R> {
    let writeId: string;
    if (held) {
      writeId = held.slot.writeId;
      const updated = await this.knex('pending_writes')
        .where({ write_id: writeId })
        .update({
          before: intent.before ? JSON.stringify(intent.before) : null,
          after: intent.after ? JSON.stringify(intent.after) : null,
          side_effects: JSON.stringify(intent.sideEffects),
          target_version: held.targetVersion,
        });
      // Only recovery removes a held slot, and only once it is far older than any request may take.
      if (updated !== 1) throw scimErrors.unavailable('The change took too long and was abandoned; try again', 1);
    } else {
      writeId = randomUUID();
      await this.insertIntent(writeId, intent, intent.operation === 'create' ? 1 : undefined);
    }
    let result: R;
    try {
      result = await ownerWrite(writeId);
    } catch (err) {
      // A definite refusal means nothing was written: forget the intent. Otherwise the outcome is unknown and
      // recovery settles it with the owner.
      if (isDefinitiveFailure(err)) await this.knex('pending_writes').where({ write_id: writeId }).delete();
      throw err;
    }
    this.faults.afterOwnerWrite?.();
    const { resourceId, after } = settled(result);
    await this.knex.transaction(async (tx) => {
      const [row] = (await tx('pending_writes').where({ write_id: writeId }).delete().returning('*')) as PendingRow[];
      // Recovery got there first (this request was very slow): it has audited the write already.
      if (!row) return;
      await this.settle(tx, row, resourceId, after ?? null, false);
    });
    return result;
  }

  /** Settles intents older than `olderThanMs` (left by a crash or an unknown outcome). Safe on every replica. */
  async recover(olderThanMs: number): Promise<{ applied: number; abandoned: number; unresolved: number }> {
    const counts = { applied: 0, abandoned: 0, unresolved: 0 };
    await this.knex.transaction(async (tx) => {
      const rows = (await tx('pending_writes')
        .where('created_at', '<', tx.raw(`now() - make_interval(secs => ?)`, [olderThanMs / 1000]))
        .orderBy('created_at')
        .limit(100)
        .forUpdate()
        .skipLocked()) as PendingRow[];
      for (const row of rows) {
        let outcome: Awaited<ReturnType<Resolver>>;
        try {
          outcome = await this.resolvers[row.resource_type](row.write_id);
        } catch (err) {
          counts.unresolved++;
          this.logger.warn(
            { err, write_id: row.write_id },
            'could not settle a pending provisioning write; will retry',
          );
          continue;
        }
        await tx('pending_writes').where({ write_id: row.write_id }).delete();
        if (outcome.applied) {
          await this.settle(tx, row, outcome.resourceId, row.after, true);
          counts.applied++;
        } else counts.abandoned++;
      }
    });
    if (counts.applied || counts.abandoned) this.logger.info(counts, 'settled pending provisioning writes');
    return counts;
  }

  private async settle(
    tx: Knex.Transaction,
    row: PendingRow,
    resourceId: string,
    after: Doc | null,
    recovered: boolean,
  ): Promise<void> {
    await tx('audit_log').insert({
      actor: row.actor,
      operation: row.operation,
      resource_type: row.resource_type,
      resource_id: resourceId,
      request_id: row.request_id,
      write_id: row.write_id,
      before: row.before ? JSON.stringify(row.before) : null,
      after: after ? JSON.stringify(after) : null,
      recovered,
    });
    const effects = row.side_effects;
    if (effects.userAttributes !== undefined) {
      if (effects.userAttributes === null || Object.keys(effects.userAttributes).length === 0) {
        await tx('user_attributes').where({ user_id: resourceId }).delete();
      } else {
        await tx('user_attributes')
          .insert({ user_id: resourceId, attributes: JSON.stringify(effects.userAttributes), updated_at: tx.fn.now() })
          .onConflict('user_id')
          .merge(['attributes', 'updated_at']);
      }
    }
    if (effects.groupExternalId !== undefined) {
      await tx('group_attributes')
        .insert({ group_id: Number(resourceId), external_id: effects.groupExternalId, updated_at: tx.fn.now() })
        .onConflict('group_id')
        .merge(['external_id', 'updated_at']);
    }
  }
}

/** A journal whose recovery asks the Users and Groups services about write ids. */
export function createJournal(deps: {
  knex: Knex;
  users: PromiseClient<usersV1.UsersServiceClient>;
  groups: PromiseClient<groupsV1.GroupsServiceClient>;
  logger: Logger;
  options?: JournalOptions;
}): WriteJournal {
  return new WriteJournal(
    deps.knex,
    {
      User: async (writeId) => {
        const r = await deps.users.resolveWrite({ writeId });
        return r.outcome === usersV1.WriteOutcome.WRITE_OUTCOME_APPLIED && r.user
          ? { applied: true, resourceId: r.user.id }
          : { applied: false };
      },
      Group: async (writeId) => {
        const r = await deps.groups.resolveWrite({ writeId });
        return r.outcome === groupsV1.WriteOutcome.WRITE_OUTCOME_APPLIED && r.group
          ? { applied: true, resourceId: String(r.group.id) }
          : { applied: false };
      },
    },
    deps.logger,
    deps.options,
  );
}
