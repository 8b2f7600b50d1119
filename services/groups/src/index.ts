export { createServer, type GroupsServerDeps } from './server';
export { openDatabase, SCHEMA } from './database';
export { GroupsRepository } from './groups-repo';
export { ERASURE_PLAN } from './erasure-plan';
