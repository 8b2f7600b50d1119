// Adding an RPC is one .proto edit plus its handler (docs/architecture.md, "Adding an RPC"): a throw-away RPC written
// here as a newcomer would write it, built by buf and read by the same code that generates proto/gen/method-rules.ts,
// is authorized, bound to its end user, kept to its organization and retried as its options say, and shows in the
// call graph — no table of the runtime, the stack or the chart is edited.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { METHOD_RULES, PROTO_ROOT, type Component, type MethodRules } from '@mileage/proto';
import { methodRulesOf } from '@mileage/proto/dist/src/method-rules';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EndUserSigner } from './end-user';
import { decodeServiceError } from './errors';
import { createGrpcClient, type CallSettings } from './grpc-client';
import { startGrpcServer, type CallContext, type GrpcServerHandle } from './grpc-server';
import { grpcTls } from './grpc-tls';
import { createLogger } from '../telemetry/logger';
import { Metrics } from '../telemetry/metrics';
import { createTestPki, TEST_SPIFFE_PREFIX, type TestPki } from '../testing';
import { callGraph } from './call-graph';
import { retryMethodConfig } from './retry';

const THROWAWAY_PROTO = `syntax = "proto3";

package mileage.drives.v1;

import "mileage/rpc/v1/rules.proto";

service MileageNotesService {
  // GetMileageNote returns a note on a user's mileage.
  rpc GetMileageNote(GetMileageNoteRequest) returns (GetMileageNoteResponse) {
    option idempotency_level = NO_SIDE_EFFECTS;
    option (mileage.rpc.v1.rules) = {
      callers: [COMPONENT_SCIM, COMPONENT_WEBHOOKS]
      end_user: {from: [COMPONENT_SCIM], user_field: "user_id"}
      organization: ORGANIZATION_SCOPE_REQUIRED
    };
  }
}

message GetMileageNoteRequest {
  string user_id = 1;
}

message GetMileageNoteResponse {
  string note = 1;
}
`;
const PATH = '/mileage.drives.v1.MileageNotesService/GetMileageNote';

let dir: string;
let pki: TestPki;
let server: GrpcServerHandle;
let rules: Record<string, MethodRules<Component>>;
let Client: grpc.ServiceClientConstructor;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'adding-an-rpc-'));
  // The module as it would be after the edit: the options file and the new .proto.
  const module = path.join(dir, 'proto');
  mkdirSync(path.join(module, 'mileage/rpc/v1'), { recursive: true });
  mkdirSync(path.join(module, 'mileage/drives/v1'), { recursive: true });
  copyFileSync(path.join(PROTO_ROOT, 'mileage/rpc/v1/rules.proto'), path.join(module, 'mileage/rpc/v1/rules.proto'));
  writeFileSync(path.join(module, 'mileage/drives/v1/notes.proto'), THROWAWAY_PROTO);
  // proto/'s own buf, as `npm run generate` runs it.
  const buf = require.resolve('@bufbuild/buf/bin/buf', { paths: [PROTO_ROOT] });
  const image = path.join(dir, 'image.binpb');
  execFileSync(process.execPath, [buf, 'build', module, '-o', image]);
  // Its callers name components of the same enum, mileage.rpc.v1.Component.
  rules = methodRulesOf(readFileSync(image)).methods as Record<string, MethodRules<Component>>;

  const definition = grpc.loadPackageDefinition(
    protoLoader.loadSync('mileage/drives/v1/notes.proto', { includeDirs: [module] }),
  ) as unknown as { mileage: { drives: { v1: { MileageNotesService: grpc.ServiceClientConstructor } } } };
  Client = definition.mileage.drives.v1.MileageNotesService;
  pki = createTestPki(dir);
  server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [
      {
        definition: Client.service,
        rules,
        // The handler: the organization comes from the chain, the user is the one the gateway vouched for.
        handlers: {
          GetMileageNote: async (request: { userId: string }, ctx: CallContext) => ({
            note: `${request.userId} in organization ${ctx.organizationId}`,
          }),
        } as never,
      },
    ],
    protoFiles: [],
    logger: createLogger({ service: 'adding-an-rpc-test', level: 'silent' }),
    metrics: new Metrics('drives'),
    tls: grpcTls(tlsEnv('drives')),
  });
});

after(async () => {
  await server?.shutdown(1_000);
  rmSync(dir, { recursive: true, force: true });
});

function tlsEnv(component: string) {
  const files = pki.issue(component, `${TEST_SPIFFE_PREFIX}${component}`);
  return {
    GRPC_TLS_CERT_FILE: files.certFile,
    GRPC_TLS_KEY_FILE: files.keyFile,
    GRPC_TLS_CA_FILE: pki.caFile,
    GRPC_TLS_SPIFFE_PREFIX: TEST_SPIFFE_PREFIX,
  };
}

/** GetMileageNote as `component` with `settings`: the note, or the refusal's code and reason. */
async function callAs(component: string, userId: string, settings: CallSettings) {
  const client = createGrpcClient(Client as never, `127.0.0.1:${server.port}`, {
    defaultDeadlineMs: 5_000,
    credentials: grpcTls(tlsEnv(component)).channelCredentials(),
    rules,
  } as never) as unknown as Record<string, (request: unknown, settings: CallSettings) => Promise<{ note: string }>> & {
    close(): void;
  };
  try {
    return (await client.GetMileageNote!({ userId }, settings)).note;
  } catch (err) {
    const { code, reason } = decodeServiceError(err as grpc.ServiceError);
    return { code: grpc.status[code], reason };
  } finally {
    client.close();
  }
}

/** The gateway's end-user context of Alice in organization 1, for SCIM's calls. */
function aliceVouched(): CallSettings {
  const gateway = pki.issue('gateway', `${TEST_SPIFFE_PREFIX}gateway`);
  const signer = new EndUserSigner(readFileSync(gateway.certFile), readFileSync(gateway.keyFile));
  return { organizationId: 1, endUser: signer.sign({ sub: 'AliceAdm01', org: 1, scopes: [], aud: ['drives'] }) };
}

describe('a throw-away RPC, added by its .proto and its handler alone', () => {
  test('its rules are read from its options', () => {
    assert.deepEqual(rules[PATH], {
      callers: ['scim', 'webhooks'],
      endUser: { from: ['scim'], userField: 'userId' },
      organization: 'required',
      idempotency: 'no-side-effects',
    });
  });

  test('only its callers may call it', async () => {
    assert.deepEqual(await callAs('gateway', 'AliceAdm01', aliceVouched()), {
      code: 'PERMISSION_DENIED',
      reason: 'CALLER_NOT_ALLOWED',
    });
    assert.equal(await callAs('webhooks', 'AliceAdm01', { organizationId: 2 }), 'AliceAdm01 in organization 2');
  });

  test('a caller bound to the end user acts for the user the gateway vouched for, and for nobody else', async () => {
    assert.equal(await callAs('scim', 'AliceAdm01', aliceVouched()), 'AliceAdm01 in organization 1');
    const refused = { code: 'PERMISSION_DENIED', reason: 'END_USER_NOT_VOUCHED' };
    assert.deepEqual(await callAs('scim', 'BobDriver1', aliceVouched()), refused, 'another user');
    assert.deepEqual(await callAs('scim', 'AliceAdm01', { organizationId: 1 }), refused, 'no context');
    assert.deepEqual(
      await callAs('scim', 'AliceAdm01', { ...aliceVouched(), organizationId: 2 }),
      refused,
      'other org',
    );
  });

  test('it acts inside the organization the call names, and is refused without one', async () => {
    assert.deepEqual(await callAs('webhooks', 'AliceAdm01', {}), {
      code: 'FAILED_PRECONDITION',
      reason: 'ORGANIZATION_REQUIRED',
    });
  });

  test('its clients retry it, as a read', () => {
    assert.deepEqual(retryMethodConfig(Client.service, rules), [
      {
        name: [{ service: 'mileage.drives.v1.MileageNotesService', method: 'GetMileageNote' }],
        retryPolicy: {
          maxAttempts: 2,
          initialBackoff: '0.02s',
          maxBackoff: '0.1s',
          backoffMultiplier: 2,
          retryableStatusCodes: ['UNAVAILABLE'],
        },
      },
    ]);
  });

  test('the call graph gains its callers: SCIM and Webhooks now call Drives, which the chart must then allow', () => {
    const before = callGraph(METHOD_RULES);
    const after = callGraph({ ...METHOD_RULES, ...rules });
    assert.deepEqual(before.scim, ['groups', 'users']);
    assert.deepEqual(after.scim, ['drives', 'groups', 'users']);
    assert.deepEqual(after.webhooks, ['drives', 'groups']);
    // The chart's call-graph.yaml no longer matches (call-graph.test.ts fails until it lists these two paths).
    assert.notDeepEqual(after, before);
  });
});
