export { createServer, SCIM_CONTENT_TYPE } from './server';
export type { ScimDeps } from './context';
