import { scimAuditV1 } from '@mileage/proto';
import { errors, type FieldViolation } from '@mileage/runtime/grpc';

const OPERATION_NAMES: Partial<Record<scimAuditV1.AuditOperation, 'create' | 'replace' | 'patch' | 'delete'>> = {
  [scimAuditV1.AuditOperation.AUDIT_OPERATION_CREATE]: 'create',
  [scimAuditV1.AuditOperation.AUDIT_OPERATION_REPLACE]: 'replace',
  [scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH]: 'patch',
  [scimAuditV1.AuditOperation.AUDIT_OPERATION_DELETE]: 'delete',
};

/**
 * The provisioning audit entry an owner records in the transaction of the write it came with, as the columns of its
 * provisioning_audit table (the resource's own column is the owner's); INVALID_ARGUMENT without actor or operation.
 */
export function auditRow(audit: scimAuditV1.ProvisioningAudit, version: number) {
  const operation = OPERATION_NAMES[audit.operation];
  const violations: FieldViolation[] = [];
  if (audit.actor.trim() === '') violations.push({ field: 'audit.actor', description: 'required' });
  if (!operation) violations.push({ field: 'audit.operation', description: 'create, replace, patch or delete' });
  if (violations.length) throw errors.invalidArgument('invalid audit entry', violations);
  return {
    actor: audit.actor,
    operation,
    version,
    request_id: audit.requestId || null,
    attestation_nonce: audit.attestationNonce || null,
    before: audit.before ? JSON.stringify(audit.before) : null,
    after: audit.after ? JSON.stringify(audit.after) : null,
  };
}
