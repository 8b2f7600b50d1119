export { createServer, type UsersServerDeps } from './server';
export { openDatabase, SCHEMA } from './database';
export { generateUserId, UsersRepository } from './users-repo';
