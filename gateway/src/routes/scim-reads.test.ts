// The SCIM reads of one turn go to the SCIM service in one HandleRequests call per client and organization, each
// answered or failed on its own. The SCIM client is faked (a unit boundary): what is checked is what is sent.
import { status } from '@grpc/grpc-js';
import type { scimV1 } from '@mileage/proto';
import {
  AppError,
  decodeServiceError,
  toRpcStatus,
  type CallSettings,
  type PromiseClient,
} from '@mileage/runtime/grpc';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ScimReads, type ScimRead } from './scim-reads';

const ok = (path: string): scimV1.HandleRequestResponse => ({ status: 200, headers: {}, body: Buffer.from(path) });

function fakeScim(batchFailure?: Error) {
  const calls: { method: string; paths: string[]; requestIds: string[]; call: CallSettings | undefined }[] = [];
  const client = {
    handleRequest: async (request: scimV1.HandleRequestRequest, call?: CallSettings) => {
      calls.push({ method: 'HandleRequest', paths: [request.path], requestIds: [call?.requestId ?? ''], call });
      return ok(request.path);
    },
    handleRequests: async (batch: scimV1.HandleRequestsRequest, call?: CallSettings) => {
      calls.push({
        method: 'HandleRequests',
        paths: batch.requests.map((r) => r.path),
        requestIds: batch.requests.map((r) => r.requestId),
        call,
      });
      if (batchFailure) throw batchFailure;
      return {
        results: batch.requests.map((r): scimV1.BatchedResult => {
          if (r.path === '/Users/refused')
            return {
              result: {
                $case: 'error',
                value: toRpcStatus(
                  new AppError(status.UNAUTHENTICATED, 'not attested', { reason: 'ATTESTATION_REPLAYED' }),
                ),
              },
            };
          return { result: { $case: 'response', value: ok(r.path) } };
        }),
      };
    },
  } as unknown as PromiseClient<scimV1.ScimServiceClient>;
  return { client, calls };
}

function counter() {
  const counted = { total: 0, inc: (n: number) => void (counted.total += n) };
  return counted;
}

const read = (path: string, requestId: string, organizationId = 1, clientId = 'okta'): ScimRead => ({
  request: {
    method: 'GET',
    path,
    query: '',
    headers: {},
    body: Buffer.alloc(0),
    clientId,
    actorAttestation: `att-${requestId}`,
    organizationId,
  },
  call: { requestId, organizationId, deadlineMs: 10_000, endUser: { token: `ctx-${clientId}`, cert: 'gw' } },
});

const bodies = (answers: scimV1.HandleRequestResponse[]) => answers.map((a) => Buffer.from(a.body).toString());

test('the reads of one turn share one call per client and organization; one alone goes as HandleRequest', async () => {
  const { client, calls } = fakeScim();
  const reads = new ScimReads(client, counter());
  const answers = await Promise.all([
    reads.send(read('/Users/a', 'r1')),
    reads.send(read('/Users/b', 'r2')),
    reads.send(read('/Users/c', 'r3', 2)),
    reads.send(read('/Users/d', 'r4')),
  ]);
  assert.deepEqual(bodies(answers), ['/Users/a', '/Users/b', '/Users/c', '/Users/d']);
  assert.deepEqual(
    calls.map(({ method, paths, requestIds }) => ({ method, paths, requestIds })),
    [
      { method: 'HandleRequests', paths: ['/Users/a', '/Users/b', '/Users/d'], requestIds: ['r1', 'r2', 'r4'] },
      { method: 'HandleRequest', paths: ['/Users/c'], requestIds: ['r3'] },
    ],
  );
  // The batch call goes under the first read's settings: its end-user context and deadline.
  assert.equal(calls[0]!.call?.endUser?.token, 'ctx-okta');
  assert.equal(calls[0]!.call?.requestId, 'r1');
});

test("a read's own failure is its alone, and reads as its own call's error would", async () => {
  const reads = new ScimReads(fakeScim().client, counter());
  const [fine, refused] = await Promise.allSettled([
    reads.send(read('/Users/a', 'r1')),
    reads.send(read('/Users/refused', 'r2')),
  ]);
  assert.equal(fine.status, 'fulfilled');
  assert.equal(refused.status, 'rejected');
  const decoded = decodeServiceError((refused as PromiseRejectedResult).reason as Error);
  assert.deepEqual([decoded.code, decoded.reason], [status.UNAUTHENTICATED, 'ATTESTATION_REPLAYED']);
});

test('a failed call fails every read it carried with its error', async () => {
  const unavailable = Object.assign(new Error('14 UNAVAILABLE'), { code: status.UNAVAILABLE });
  const reads = new ScimReads(fakeScim(unavailable).client, counter());
  const settled = await Promise.allSettled([reads.send(read('/Users/a', 'r1')), reads.send(read('/Users/b', 'r2'))]);
  assert.deepEqual(
    settled.map((s) => (s.status === 'rejected' ? s.reason : 'answered')),
    [unavailable, unavailable],
  );
});

test('a SCIM replica that knows no HandleRequests gets each read of the batch on its own, counted', async () => {
  const unimplemented = Object.assign(new Error('12 UNIMPLEMENTED'), { code: status.UNIMPLEMENTED });
  const { client, calls } = fakeScim(unimplemented);
  const fallbacks = counter();
  const reads = new ScimReads(client, fallbacks);
  const answers = await Promise.all([reads.send(read('/Users/a', 'r1')), reads.send(read('/Users/b', 'r2'))]);
  assert.deepEqual(bodies(answers), ['/Users/a', '/Users/b']);
  assert.deepEqual(
    calls.map((c) => c.method),
    ['HandleRequests', 'HandleRequest', 'HandleRequest'],
  );
  assert.equal(fallbacks.total, 2);
});

test('more reads in a turn than a call carries are split into calls of at most 64', async () => {
  const { client, calls } = fakeScim();
  const reads = new ScimReads(client, counter());
  const answers = await Promise.all(Array.from({ length: 130 }, (_, i) => reads.send(read(`/Users/u${i}`, `r${i}`))));
  assert.equal(answers.length, 130);
  assert.deepEqual(
    calls.map((c) => [c.method, c.paths.length]),
    [
      ['HandleRequests', 64],
      ['HandleRequests', 64],
      ['HandleRequests', 2],
    ],
  );
});
