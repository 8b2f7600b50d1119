export { createServer, SCIM_CONTENT_TYPE } from './server';
export { openDatabase, SCHEMA } from './database';
export type { ScimDeps } from './context';
