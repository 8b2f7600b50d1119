import type { Request } from 'express';
import { PAGE_LIMIT } from '../drive-params';
import type { ValidationIssue } from '../problems';
import type { ApiParameter } from '../v1';

/** A UUID in its canonical lower-case form (the ids of webhooks and SCIM tokens). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A path parameter that is a UUID, as the OpenAPI document declares it. */
export const uuidPathParameter = (name: string, what: string): ApiParameter => ({
  name,
  in: 'path',
  required: true,
  description: `${what} id (a UUID).`,
  schema: { type: 'string', format: 'uuid' },
});

/** The JSON body of a request (read raw by the route's body reader), or the 422 issue saying why not. */
export function jsonBody(req: Request): { value: unknown } | { issue: ValidationIssue } {
  const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/(.+\+)?json\b/i.test(type))
    return { issue: { loc: ['body'], msg: 'The body must be application/json', type: 'model_attributes_type' } };
  try {
    return { value: JSON.parse(raw) };
  } catch {
    return { issue: { loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' } };
  }
}

/** The limit of a page of a /v1 list that has no other parameters (PAGE_LIMIT: 1..1000, default 100; the last value of a repeated parameter wins). */
export function pageLimit(req: Request): number | ValidationIssue {
  const raw = req.query.limit;
  const value = Array.isArray(raw) ? raw.at(-1) : raw;
  if (value === undefined) return PAGE_LIMIT.default;
  const n = Number(value);
  if (typeof value === 'string' && /^[0-9]{1,4}$/.test(value) && n >= PAGE_LIMIT.min && n <= PAGE_LIMIT.max)
    return Number(value);
  return { loc: ['query', 'limit'], msg: 'Input should be an integer from 1 to 1000', type: 'int_parsing' };
}
