/**
 * Request ids travel explicitly (function arguments, gRPC metadata, log fields) rather than through
 * AsyncLocalStorage: on Node.js 20 an active AsyncLocalStorage puts a hook on every promise of the process.
 */

/** Metadata key carrying the request id between processes. */
export const REQUEST_ID_METADATA_KEY = 'x-request-id';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Accepts a client-sent request id only when it is short and harmless to log. */
export function isAcceptableRequestId(value: unknown): value is string {
  return typeof value === 'string' && REQUEST_ID_PATTERN.test(value);
}
