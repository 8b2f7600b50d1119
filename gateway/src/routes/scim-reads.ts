import { status } from '@grpc/grpc-js';
import type { scimV1 } from '@mileage/proto';
import { PerTurnGroups } from '@mileage/runtime/database';
import {
  serviceErrorFromStatus,
  type CallSettings,
  type PromiseClient,
  MAX_BATCHED_SCIM_REQUESTS,
  slices,
} from '@mileage/runtime/grpc';

/** One SCIM read as the gateway forwards it: the request, attested, and the settings of its call. */
export interface ScimRead {
  request: scimV1.HandleRequestRequest;
  call: CallSettings;
}

interface Waiting extends ScimRead {
  resolve(answer: scimV1.HandleRequestResponse): void;
  reject(err: unknown): void;
}

/** Reads share a call only for one provisioning client and organization, under one end-user context. */
const batchKey = ({ request, call }: ScimRead) =>
  `${request.organizationId}\n${request.clientId}\n${call.endUser?.token ?? ''}\n${call.endUser?.cert ?? ''}`;

/**
 * The SCIM reads (GET, HEAD) of one turn of the event loop, forwarded to the SCIM service in one HandleRequests call
 * per provisioning client and organization: an identity provider sends its lookups in bursts, and a call of their
 * own each cost the gateway and the SCIM service more than the lookup itself (docs/benchmarks.md). Each read keeps
 * its own attestation, answer and failure; a read alone in its turn goes as HandleRequest. Writes never come here:
 * none waits for another request. A SCIM replica of the release before, which knows no HandleRequests, is sent each
 * read of the batch on its own (counted).
 */
export class ScimReads {
  private readonly turns = new PerTurnGroups<Waiting[]>((batches) => this.flush(batches));

  constructor(
    private readonly scim: PromiseClient<scimV1.ScimServiceClient>,
    private readonly singlesAfterUnimplemented: { inc(count: number): void },
  ) {}

  send(read: ScimRead): Promise<scimV1.HandleRequestResponse> {
    return new Promise((resolve, reject) => this.turns.of(batchKey(read), () => []).push({ ...read, resolve, reject }));
  }

  private flush(batches: Waiting[][]): void {
    for (const reads of batches)
      for (const chunk of slices(reads, MAX_BATCHED_SCIM_REQUESTS))
        if (chunk.length === 1) this.single(chunk[0]!);
        else void this.batch(chunk);
  }

  private single(read: Waiting): void {
    this.scim.handleRequest(read.request, read.call).then(read.resolve, read.reject);
  }

  private async batch(reads: Waiting[]): Promise<void> {
    const [first] = reads as [Waiting];
    const { clientId, organizationId } = first.request;
    let answer: scimV1.HandleRequestsResponse;
    try {
      // The first read lends the call its request id, trace and deadline (all reads of a turn have the same).
      answer = await this.scim.handleRequests(
        {
          clientId,
          organizationId,
          requests: reads.map(({ request, call }) => ({
            method: request.method,
            path: request.path,
            query: request.query,
            headers: request.headers,
            body: request.body,
            actorAttestation: request.actorAttestation,
            requestId: call.requestId ?? '',
          })),
        },
        first.call,
      );
    } catch (err) {
      if ((err as { code?: unknown }).code === status.UNIMPLEMENTED) {
        this.singlesAfterUnimplemented.inc(reads.length);
        for (const read of reads) this.single(read);
      } else for (const read of reads) read.reject(err);
      return;
    }
    reads.forEach((read, i) => {
      const result = answer.results[i]?.result;
      if (result?.$case === 'response') read.resolve(result.value);
      else if (result?.$case === 'error') read.reject(serviceErrorFromStatus(result.value));
      else
        read.reject(
          serviceErrorFromStatus({ code: status.INTERNAL, message: 'no answer for this request', details: [] }),
        );
    });
  }
}
