import { AsyncLocalStorage } from 'node:async_hooks';

/** What travels with one request through a process: set at the edge, read by logs and outgoing calls. */
export interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function runWithContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

export function currentContext(): RequestContext | undefined {
  return storage.getStore();
}

/** Metadata key carrying the request id between processes. */
export const REQUEST_ID_METADATA_KEY = 'x-request-id';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Accepts a client-sent request id only when it is short and harmless to log. */
export function isAcceptableRequestId(value: unknown): value is string {
  return typeof value === 'string' && REQUEST_ID_PATTERN.test(value);
}
