export { createServer, SCIM_CONTENT_TYPE } from './server';
export { createJournal, WriteJournal, type JournalFaults } from './journal';
export { openDatabase, SCHEMA } from './database';
export type { ScimDeps } from './context';
