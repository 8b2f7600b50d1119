export { createServer, SCIM_CONTENT_TYPE } from './server';
export type { ScimDeps } from './context';
// What a test needs to see a declaration's attribute reach discovery, filters and validation.
export { Discovery } from './discovery';
export { parseFilter, toOwnerFilter } from './filter';
export { normalizeBody, resourceSchema } from './resource';
