export { createServer, type UsersServerDeps } from './server';
export { openDatabase, SCHEMA } from './database';
export { generateUserId, UsersRepository } from './users-repo';
export { isUserId, USER_ID_PATTERN } from './validation';
