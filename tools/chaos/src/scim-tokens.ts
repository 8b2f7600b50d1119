// SCIM secret tokens across the two gateways: minted by an organization admin on one gateway, used on both (so both
// have it cached), rotated with overlap (a second token while the first still works), the first revoked on gateway A:
// what each gateway answers the first request after the DELETE's 204 (CONTRACT §7: refused on the very next request).
import type { ReplicaId } from './stack';

export interface SecretTokenRun {
  /** Whether the first token worked on both gateways before the second was minted. */
  firstServed: boolean;
  /** Whether both tokens worked on both gateways at once (the overlap of a rotation). */
  overlapServed: boolean;
  /** Per gateway: the status of the first request with the revoked token after the revocation's 204 (both at once). */
  firstAfterRevocation: Record<ReplicaId, number>;
  /** Per gateway: ms from the revocation's 204 to its first 401 for the revoked token (undefined: never within the wait). */
  refusedAfterMs: Record<ReplicaId, number | undefined>;
  /** Whether the second token still worked on both gateways after the first was refused. */
  survivorServed: boolean;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function status(url: string, token: string): Promise<number> {
  const res = await fetch(`${url}/scim/v2/Users?count=1`, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

async function servedEverywhere(gateways: Record<ReplicaId, string>, tokens: string[]): Promise<boolean> {
  const statuses = await Promise.all(
    Object.values(gateways).flatMap((url) => tokens.map((token) => status(url, token))),
  );
  return statuses.every((s) => s === 200);
}

/** Mints a token on gateway A as `adminToken` (an organization admin's token with scope organization_manage). */
async function mint(url: string, adminToken: string, name: string): Promise<{ id: string; token: string }> {
  const res = await fetch(`${url}/v1/organization/scim-tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  if (res.status !== 201) throw new Error(`minting a SCIM token: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string; token: string };
}

/**
 * The whole sequence; after the first request past the revocation, waits for a gateway that still served the token at
 * most `waitMs` (polling every 100 ms), to say how late it refused it.
 */
export async function exerciseSecretTokens(
  gateways: Record<ReplicaId, string>,
  adminToken: string,
  waitMs: number,
): Promise<SecretTokenRun> {
  const first = await mint(gateways.a, adminToken, 'chaos rotation: old');
  const firstServed = await servedEverywhere(gateways, [first.token]);
  const second = await mint(gateways.b, adminToken, 'chaos rotation: new');
  const overlapServed = await servedEverywhere(gateways, [first.token, second.token]);
  const revoke = await fetch(`${gateways.a}/v1/organization/scim-tokens/${first.id}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${adminToken}` },
  });
  if (revoke.status !== 204) throw new Error(`revoking a SCIM token: ${revoke.status} ${await revoke.text()}`);
  const revokedAt = Date.now();
  const [atA, atB] = await Promise.all([status(gateways.a, first.token), status(gateways.b, first.token)]);
  const firstAfterRevocation = { a: atA, b: atB };
  // Past the first request: how late a gateway that still served it refused it (for the report).
  const refusedAfterMs: SecretTokenRun['refusedAfterMs'] = {
    a: atA === 401 ? Date.now() - revokedAt : undefined,
    b: atB === 401 ? Date.now() - revokedAt : undefined,
  };
  while (Date.now() - revokedAt < waitMs && Object.values(refusedAfterMs).some((v) => v === undefined)) {
    for (const id of ['a', 'b'] as const)
      if (refusedAfterMs[id] === undefined && (await status(gateways[id], first.token)) === 401)
        refusedAfterMs[id] = Date.now() - revokedAt;
    await sleep(100);
  }
  const survivorServed = await servedEverywhere(gateways, [second.token]);
  return { firstServed, overlapServed, firstAfterRevocation, refusedAfterMs, survivorServed };
}
