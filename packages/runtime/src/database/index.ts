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
  ORGANIZATION_SETTING,
  organizationIsolationStatements,
  readAcrossOrganizations,
  readInCallOrganization,
  readInOrganization,
  type ReadStatements,
  snapshotInOrganization,
  statementsOf,
} from './tenancy';
