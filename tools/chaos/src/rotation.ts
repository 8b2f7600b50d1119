// The rotation of CURSOR_SECRET and ACTOR_ATTESTATION_SECRET in the order docs/operations.md gives ("Rotating the
// cursor secret and the attestation key"): three steps, each a rolling restart of the pods whose setting changes. Pure:
// the steps as environment changes, and what a mix of replicas at two neighbouring steps would refuse.

export interface Keys {
  cursor: string;
  attestation: string;
}

/** One step: the environment changes of the gateways and of the SCIM service's replicas (undefined: unset). */
export interface RotationStep {
  what: string;
  gateway: Record<string, string | undefined>;
  scim: Record<string, string | undefined>;
}

/**
 * 1. The new keys as the previous ones: every replica accepts both, everything is still signed with the old ones.
 * 2. The new keys current, the old ones previous: signed with the new; a replica still at step 1 accepts them.
 * 3. The SCIM service drops the old attestation key (every gateway signs with the new one since step 2). The gateways
 *    keep the old cursor key as the previous one: the cursors clients hold stay valid until the operator removes it.
 */
export function rotationSteps(before: Keys, after: Keys): RotationStep[] {
  return [
    {
      what: 'the new keys as the previous ones',
      gateway: { CURSOR_SECRET_PREVIOUS: after.cursor },
      scim: { ACTOR_ATTESTATION_PREVIOUS_SECRET: after.attestation },
    },
    {
      what: 'the new keys current, the old ones previous',
      gateway: {
        CURSOR_SECRET: after.cursor,
        CURSOR_SECRET_PREVIOUS: before.cursor,
        ACTOR_ATTESTATION_SECRET: after.attestation,
      },
      scim: { ACTOR_ATTESTATION_SECRET: after.attestation, ACTOR_ATTESTATION_PREVIOUS_SECRET: before.attestation },
    },
    {
      what: "the SCIM service's old attestation key dropped",
      gateway: {},
      scim: { ACTOR_ATTESTATION_PREVIOUS_SECRET: undefined },
    },
  ];
}

export type Env = Record<string, string | undefined>;

export const applied = (env: Env, changes: Env): Env => ({ ...env, ...changes });

/**
 * What a set of gateways and SCIM replicas, each with its own environment, would refuse: a cursor one gateway signs
 * that another does not accept, an attestation a gateway signs that a SCIM replica does not accept.
 */
export function refusals(gateways: Env[], scims: Env[]): string[] {
  const found: string[] = [];
  gateways.forEach((signer, i) => {
    gateways.forEach((reader, j) => {
      if (![reader.CURSOR_SECRET, reader.CURSOR_SECRET_PREVIOUS].includes(signer.CURSOR_SECRET))
        found.push(`gateway ${j} refuses the cursors of gateway ${i}`);
    });
    scims.forEach((verifier, j) => {
      const accepted = [verifier.ACTOR_ATTESTATION_SECRET, verifier.ACTOR_ATTESTATION_PREVIOUS_SECRET];
      if (!accepted.includes(signer.ACTOR_ATTESTATION_SECRET))
        found.push(`SCIM replica ${j} refuses the attestations of gateway ${i}`);
    });
  });
  return found;
}
