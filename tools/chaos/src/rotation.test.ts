// The rotation's order, checked in every state a rolling restart can leave the replicas in: each of the two gateways
// and the two SCIM replicas either still at the step before or already at the step (the rolls are not atomic).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applied, refusals, rotationSteps, type Env, type RotationStep } from './rotation';

const OLD = { cursor: 'old-cursor', attestation: 'old-attestation' };
const NEW = { cursor: 'new-cursor', attestation: 'new-attestation' };
const START: { gateway: Env; scim: Env } = {
  gateway: { CURSOR_SECRET: OLD.cursor, ACTOR_ATTESTATION_SECRET: OLD.attestation },
  scim: { ACTOR_ATTESTATION_SECRET: OLD.attestation },
};

/** Every mix of the four replicas between the environment before `step` and after it: the refusals of each. */
function refusalsWhileRolling(before: typeof START, step: RotationStep): string[] {
  const after = { gateway: applied(before.gateway, step.gateway), scim: applied(before.scim, step.scim) };
  const found = new Set<string>();
  for (let mix = 0; mix < 16; mix++) {
    const at = (bit: number, kind: 'gateway' | 'scim') => ((mix >> bit) & 1 ? after[kind] : before[kind]);
    const gateways = [at(0, 'gateway'), at(1, 'gateway')];
    for (const r of refusals(gateways, [at(2, 'scim'), at(3, 'scim')])) found.add(r);
    gateways.forEach((g, i) => {
      if (![g.CURSOR_SECRET, g.CURSOR_SECRET_PREVIOUS].includes(OLD.cursor))
        found.add(`gateway ${i} refuses the cursors issued before the rotation`);
    });
  }
  return [...found];
}

test('no state of the rotation refuses a cursor or an attestation; the old cursors stay valid at the end', () => {
  let env = START;
  for (const step of rotationSteps(OLD, NEW)) {
    assert.deepEqual(refusalsWhileRolling(env, step), [], step.what);
    env = { gateway: applied(env.gateway, step.gateway), scim: applied(env.scim, step.scim) };
  }
  assert.equal(env.gateway.CURSOR_SECRET, NEW.cursor);
  assert.equal(env.gateway.ACTOR_ATTESTATION_SECRET, NEW.attestation);
  assert.deepEqual(env.scim, {
    ACTOR_ATTESTATION_SECRET: NEW.attestation,
    ACTOR_ATTESTATION_PREVIOUS_SECRET: undefined,
  });
  assert.equal(env.gateway.CURSOR_SECRET_PREVIOUS, OLD.cursor, 'cursors issued before the rotation');
});

test('the check sees the refusals of a rotation done at once (the new keys current everywhere in one roll)', () => {
  const atOnce: RotationStep = {
    what: 'at once',
    gateway: { CURSOR_SECRET: NEW.cursor, ACTOR_ATTESTATION_SECRET: NEW.attestation },
    scim: { ACTOR_ATTESTATION_SECRET: NEW.attestation },
  };
  const found = refusalsWhileRolling(START, atOnce);
  assert.ok(found.includes('gateway 0 refuses the cursors of gateway 1'), found.join('; '));
  assert.ok(found.includes('SCIM replica 0 refuses the attestations of gateway 1'), found.join('; '));
});
