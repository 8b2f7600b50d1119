export { createServer, type UsersServerDeps } from './server';
export { openDatabase, SCHEMA } from './database';
export { generateUserId, USER_COLUMNS, UsersRepository } from './users-repo';
