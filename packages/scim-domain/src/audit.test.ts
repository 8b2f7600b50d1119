import { scimAuditV1 } from '@mileage/proto';
import { AppError } from '@mileage/runtime/grpc';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditRow } from './audit';

test('auditRow: the columns of an owner’s provisioning_audit row; actor and operation are required', () => {
  assert.deepEqual(
    auditRow(
      {
        actor: 'okta',
        operation: scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH,
        requestId: '',
        attestationNonce: 'n0nce',
        before: { title: 'a' },
        after: { title: 'b' },
      },
      7,
    ),
    {
      actor: 'okta',
      operation: 'patch',
      version: 7,
      request_id: null,
      attestation_nonce: 'n0nce',
      before: '{"title":"a"}',
      after: '{"title":"b"}',
    },
  );
  assert.throws(
    () =>
      auditRow({ actor: ' ', operation: scimAuditV1.AuditOperation.AUDIT_OPERATION_UNSPECIFIED, requestId: 'r' }, 1),
    (err: unknown) =>
      err instanceof AppError &&
      JSON.stringify(err.details.fieldViolations?.map((v) => v.field)) === '["audit.actor","audit.operation"]',
  );
});
