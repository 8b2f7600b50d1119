export {
  createDatabase,
  type Database,
  droppedReadAttempts,
  grantRuntimeAccess,
  Knex,
  readWithRetry,
  sqlSpans,
  type SqlStatement,
} from './db';
export {
  MAX_BATCH_GET_USERS,
  MAX_BATCHED_SCIM_REQUESTS,
  requireListWindow,
  SAFE_SCIM_METHODS,
  slices,
} from './list-window';
export { readMemberUsers } from './member-users';
export { organizationLimits, QUERY_TOO_COSTLY } from './organization-share';
export { PerTurnGroups } from './per-turn';
export {
  acrossOrganizations,
  ALL_ORGANIZATIONS_SETTING,
  COSTLY_READ,
  DECLARED_ORGANIZATION_DEFAULT,
  dropOrganizationIsolationStatements,
  foreignKeyStatements,
  inCallOrganization,
  inOrganization,
  isOrganizationId,
  type LightReadOptions,
  ONE_STATEMENT,
  ORGANIZATION_SETTING,
  organizationIsolationStatements,
  readAcrossOrganizations,
  readInCallOrganization,
  readInOrganization,
  type ReadStatements,
  requireOrganization,
  statementsOf,
} from './tenancy';
export {
  allowErasureStatements,
  CREATE_ERASED_ROWS_TABLE,
  ERASED_ROWS_TABLE,
  eraseOrganization,
  eraseOrganizationBatches,
  eraseOrganizationHandler,
  erasedRows,
  type EraseOptions,
  type ErasureBatch,
  type ErasurePlan,
  type ErasureTable,
  ERASING_ORGANIZATION_SETTING,
  ERASURE_BATCH_ROWS,
  ORGANIZATION_FREE_EVERYWHERE,
  strictAppendOnlyStatements,
} from './erasure';
