// The organization a call acts inside, as its method's scope says: required, taken when named, or none.
import * as grpc from '@grpc/grpc-js';
import type { MethodRules } from '@mileage/proto';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AppError } from '../errors';
import { ORGANIZATION_METADATA_KEY } from '../organization-metadata';
import { chain, type InboundCall } from './interceptor';
import { organizationScope } from './organization';

/** The organization the handler sees for a call of `scope` with `organization` metadata (or a request field). */
async function organizationSeen(rules: Partial<MethodRules>, organization?: string, request: unknown = {}) {
  const metadata = new grpc.Metadata();
  if (organization !== undefined) metadata.set(ORGANIZATION_METADATA_KEY, organization);
  const call = {
    rules: { callers: [], idempotency: 'unknown', ...rules },
    request,
    metadata,
  } as unknown as InboundCall;
  return chain([organizationScope()], async (passed) => passed.organizationId)(call);
}

const reasonOf = (err: unknown) => (err instanceof AppError ? `${grpc.status[err.code]} ${err.details.reason}` : err);

test('a required organization is the one the call names, and a call naming none is refused', async () => {
  assert.equal(await organizationSeen({ organization: 'required' }, '7'), 7);
  await assert.rejects(organizationSeen({ organization: 'required' }), (err) => {
    assert.equal(reasonOf(err), 'FAILED_PRECONDITION ORGANIZATION_REQUIRED');
    return true;
  });
  await assert.rejects(organizationSeen({ organization: 'required' }, '0x7'), (err) => {
    assert.equal((err as AppError).code, grpc.status.INVALID_ARGUMENT);
    return true;
  });
});

test('across-unless-named takes a named organization and none otherwise; none ignores it', async () => {
  assert.equal(await organizationSeen({ organization: 'across-unless-named' }, '3'), 3);
  assert.equal(await organizationSeen({ organization: 'across-unless-named' }), undefined);
  assert.equal(await organizationSeen({ organization: 'none' }, '3'), undefined);
});

test('a method naming an organization field reads it from the request, not the metadata', async () => {
  const scim = { organization: 'required', organizationField: 'organizationId' } as const;
  assert.equal(await organizationSeen(scim, '1', { organizationId: 2 }), 2);
  await assert.rejects(organizationSeen(scim, '1', { organizationId: 0 }), (err) => {
    assert.equal(reasonOf(err), 'FAILED_PRECONDITION ORGANIZATION_REQUIRED');
    return true;
  });
});
