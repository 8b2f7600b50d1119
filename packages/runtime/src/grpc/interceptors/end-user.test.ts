// The end-user binding of a method's rules: the gateway's context vouches for the request's user or audit actor, inside
// the call's organization, and for nobody else.
import * as grpc from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { METHOD_RULES } from '@mileage/proto';
import {
  END_USER_CERT_METADATA_KEY,
  END_USER_METADATA_KEY,
  EndUserSigner,
  EndUserVerifier,
  V1_AUDIENCE,
  type SignedEndUser,
} from '../end-user';
import { ORGANIZATION_METADATA_KEY } from '../organization-metadata';
import { createTestPki, TEST_SPIFFE_PREFIX } from '../../testing';
import { endUserProblem } from './end-user';

const dir = mkdtempSync(path.join(tmpdir(), 'end-user-binding-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const pki = createTestPki(dir);
const ca = readFileSync(pki.caFile);
const issued = pki.issue('gateway', `${TEST_SPIFFE_PREFIX}gateway`);
const gateway = new EndUserSigner(readFileSync(issued.certFile), readFileSync(issued.keyFile));
const alice = { sub: 'AliceAdm01', org: 1, scopes: ['drives_read'], aud: [...V1_AUDIENCE] };

/** A call of `method` inside `organization` with `signed` as its end-user context. */
function callOf(method: string, signed: SignedEndUser | undefined, organization: string, request: unknown) {
  const metadata = new grpc.Metadata();
  metadata.set(ORGANIZATION_METADATA_KEY, organization);
  if (signed) {
    metadata.set(END_USER_METADATA_KEY, signed.token);
    metadata.set(END_USER_CERT_METADATA_KEY, signed.cert);
  }
  return { rules: METHOD_RULES[method]!, request, metadata };
}

describe('end-user binding', () => {
  const drives = new EndUserVerifier(ca, TEST_SPIFFE_PREFIX, 'drives');
  const listUserDrives = '/mileage.drives.v1.DrivesService/ListUserDrives';

  test('vouches for its user inside its organization, and for nobody else', () => {
    const signed = gateway.sign(alice);
    assert.equal(endUserProblem(drives, callOf(listUserDrives, signed, '1', { userId: 'AliceAdm01' })), undefined);
    assert.equal(
      endUserProblem(drives, callOf(listUserDrives, signed, '1', { userId: 'BobDriver1' })),
      "userId is not the end user's",
    );
    assert.equal(
      endUserProblem(drives, callOf(listUserDrives, signed, '2', { userId: 'AliceAdm01' })),
      'the call acts inside another organization than its end user',
    );
    assert.equal(
      endUserProblem(drives, callOf(listUserDrives, undefined, '1', { userId: 'AliceAdm01' })),
      'no end-user context',
    );
  });

  test('binds the audit actor of a write to its provisioning client', () => {
    const users = new EndUserVerifier(ca, TEST_SPIFFE_PREFIX, 'users');
    const createUser = '/mileage.users.v1.UsersService/CreateUser';
    const signed = gateway.sign({ client: 'okta-prod', org: 1, scopes: ['scim'], aud: ['scim', 'users', 'groups'] });
    const request = (actor?: string) => ({ user: {}, ...(actor ? { audit: { actor } } : {}) });
    assert.equal(endUserProblem(users, callOf(createUser, signed, '1', request('okta-prod'))), undefined);
    assert.match(endUserProblem(users, callOf(createUser, signed, '1', request('entra-prod')))!, /audit.actor is not/);
    assert.match(endUserProblem(users, callOf(createUser, signed, '1', request()))!, /audit.actor is not/, 'no audit');
    // A user's context (no client) cannot record an actor.
    const ofAlice = gateway.sign({ ...alice, aud: ['users'] });
    assert.match(endUserProblem(users, callOf(createUser, ofAlice, '1', request('x')))!, /actor/);
  });

  test("takes the organization from the request's field where the method names one (SCIM's)", () => {
    const scim = new EndUserVerifier(ca, TEST_SPIFFE_PREFIX, 'scim');
    const handleRequest = '/mileage.scim.v1.ScimService/HandleRequest';
    const signed = gateway.sign({ client: 'okta-prod', org: 1, scopes: ['scim'], aud: ['scim', 'users', 'groups'] });
    // The metadata says 1 in both; the field decides.
    assert.equal(
      endUserProblem(scim, callOf(handleRequest, signed, '1', { clientId: 'okta-prod', organizationId: 1 })),
      undefined,
    );
    assert.equal(
      endUserProblem(scim, callOf(handleRequest, signed, '1', { clientId: 'okta-prod', organizationId: 2 })),
      'the call acts inside another organization than its end user',
    );
  });
});
