import { addAttestationNonce, dropAttestationNonce } from '@mileage/runtime/audit';
import type { Knex } from 'knex';

// Each SCIM write's attestation nonce, taken once: a write replayed to another SCIM replica is refused here.
export async function up(knex: Knex): Promise<void> {
  await addAttestationNonce(knex, 'provisioning_audit');
}

// The nonces matter only within an attestation's window (seconds): a rollback may forget them.
export async function down(knex: Knex): Promise<void> {
  await dropAttestationNonce(knex, 'provisioning_audit');
}
