export { createServer, type UsersServerDeps } from './server';
export { openDatabase, SCHEMA } from './database';
export { generateUserId, USER_COLUMNS, UsersRepository } from './users-repo';
export { MAX_ACTIVE_SCIM_TOKENS, secretSha256 } from './organizations-repo';
export { ERASURE_PLAN } from './erasure-plan';
export {
  drivesExportOwner,
  exportTasks,
  groupsExportOwner,
  webhooksExportOwner,
  type ExportJobDeps,
} from './export-job';
