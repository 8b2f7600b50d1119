import type { scimV1 } from '@mileage/proto';
import {
  errors,
  toAppError,
  toRpcStatus,
  type CallContext,
  type Handlers,
  MAX_BATCHED_SCIM_REQUESTS,
  SAFE_SCIM_METHODS,
} from '@mileage/runtime/grpc';

import { type Logger } from '@mileage/runtime/telemetry';
import { attestedHeaders, type AttestedActor } from './attested-actor';
import type { ScimResponse } from './context';
import { ScimError, scimErrorFromGrpc } from './errors';
import type { Dispatch } from './routes';

export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';

/** HandleRequest (one SCIM request) and HandleRequests (a batch of reads), each request attested, then dispatched. */
export function requestHandlers(deps: {
  attestedActor: AttestedActor;
  dispatch: Dispatch;
  logger: Logger;
}): Handlers<scimV1.ScimServiceServer> {
  const { attestedActor, dispatch } = deps;

  /** One SCIM request, attested first: a refusal is thrown (the call's gRPC status), never a SCIM error body. */
  async function handleOne(
    request: scimV1.HandleRequestRequest,
    callCtx: CallContext,
  ): Promise<scimV1.HandleRequestResponse> {
    const headers = attestedHeaders(request.headers);
    const attested = attestedActor(request, headers, callCtx);
    let response: ScimResponse;
    try {
      response = await dispatch(request, headers, callCtx, attested);
    } catch (err) {
      const scimError = err instanceof ScimError ? err : scimErrorFromGrpc(err);
      // Anything else is a bug: the gRPC server logs it and answers INTERNAL without details.
      if (!scimError) throw err;
      // An owner's server-side failure (its details stay in its own log) is worth a line here too.
      if (!(err instanceof ScimError) && scimError.status >= 500 && ![503, 504].includes(scimError.status))
        deps.logger.error({ err, request_id: callCtx.requestId }, 'an owner service failed');
      response = { status: scimError.status, headers: scimError.headers, body: scimError.body() };
    }
    const payload = response.body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(response.body));
    return {
      status: response.status,
      headers: { ...(payload.length ? { 'Content-Type': SCIM_CONTENT_TYPE } : {}), ...(response.headers ?? {}) },
      body: payload,
    };
  }

  return {
    handleRequest: (request, callCtx) => handleOne(request, callCtx),

    async handleRequests(batch, callCtx) {
      if (batch.requests.length > MAX_BATCHED_SCIM_REQUESTS)
        throw errors.invalidArgument(`at most ${MAX_BATCHED_SCIM_REQUESTS} requests per call`, [
          { field: 'requests', description: `at most ${MAX_BATCHED_SCIM_REQUESTS}` },
        ]);
      // Reads only: the batch's requests run concurrently, in no order, and the gateway sends a read that got no
      // answer again (under a fresh attestation), which only a request without effects allows.
      batch.requests.forEach(({ method }, i) => {
        if (!SAFE_SCIM_METHODS.has(method.toUpperCase()))
          throw errors.invalidArgument('only GET and HEAD requests are batched', [
            { field: `requests[${i}].method`, description: 'GET or HEAD' },
          ]);
      });
      // Each request as HandleRequest would take it: the call's client and organization (which the end-user context
      // vouched for), its own request id (which its attestation covers), and its own answer or failure.
      const results = await Promise.all(
        batch.requests.map(async ({ requestId, actorAttestation, ...request }): Promise<scimV1.BatchedResult> => {
          const one = { ...request, clientId: batch.clientId, organizationId: batch.organizationId, actorAttestation };
          try {
            return { result: { $case: 'response', value: await handleOne(one, { ...callCtx, requestId }) } };
          } catch (err) {
            const { appError, unexpected } = toAppError(err);
            if (unexpected) deps.logger.error({ err, request_id: requestId }, 'a batched SCIM request failed');
            return { result: { $case: 'error', value: toRpcStatus(appError) } };
          }
        }),
      );
      return { results };
    },
  };
}
