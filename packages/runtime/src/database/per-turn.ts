/**
 * What arrives in one turn of the event loop, in groups by key, handed over once the turn's I/O callbacks have run
 * (the DataLoader pattern): the reads of many concurrent requests become one call per group. Nothing outlives its
 * turn, so every read still happens after its request arrived.
 */
export class PerTurnGroups<G> {
  private groups = new Map<unknown, G>();
  private scheduled = false;

  /** `flush` gets each turn's groups, in the order their keys first came. */
  constructor(private readonly flush: (groups: G[]) => void) {}

  /** This turn's group of `key`, made by `create` for the first item of that key. */
  of(key: unknown, create: () => G): G {
    let group = this.groups.get(key);
    if (group === undefined) this.groups.set(key, (group = create()));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.endTurn());
    }
    return group;
  }

  private endTurn(): void {
    const groups = [...this.groups.values()];
    this.groups = new Map();
    this.scheduled = false;
    this.flush(groups);
  }
}
