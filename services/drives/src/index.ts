export { createServer, type DrivesServerDeps } from './server';
export { openDatabase, SCHEMA } from './database';
export { DrivesRepository } from './drives-repo';
