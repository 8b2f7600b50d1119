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
export { organizationLimits } from './organization-share';
export { PerTurnGroups } from './per-turn';
export { DutyCycle, pauseAfter } from './duty-cycle';
export { ORGANIZATION_SETTING } from './organization-setting';
export { columnTypes, copyBinaryRows, copyOut, copyOutRows, withIntegers } from './copy-out';
export {
  joinSnapshot,
  type JoinedSnapshot,
  positionalText,
  shareSnapshot,
  type SnapshotTicket,
} from './joined-snapshot';
export {
  acrossOrganizations,
  ALL_ORGANIZATIONS_SETTING,
  COSTLY_READ,
  DECLARED_ORGANIZATION_DEFAULT,
  dropOrganizationIsolationStatements,
  foreignKeyStatements,
  inCallOrganization,
  inOrganization,
  type LightReadOptions,
  ONE_STATEMENT,
  organizationIsolationStatements,
  readAcrossOrganizations,
  readInCallOrganization,
  readInOrganization,
  type ReadStatements,
  snapshotInOrganization,
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
