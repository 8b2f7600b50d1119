export { DECLARE_VOLUME_ORGANIZATION, generateVolume } from './volume';
export { launchStack, type LaunchedStack } from './launch';
export { startPostgres, type PostgresOptions, type RunningPostgres } from './embedded-postgres';
export { provisionServiceRoles } from './postgres';
export {
  DATABASE_SERVICES,
  DEVELOPMENT_SPIFFE_PREFIX,
  developmentGrpcConfig,
  developmentPki,
  migrateServices,
  scriptOf,
  SERVICE_NAMES,
  wireStack,
  withDatabase,
  type Component,
  type ServiceName,
  type StackEnvironment,
  type StackPlan,
} from './wiring';
export { httpOk } from './processes';
export { seedDemoData } from './seed';
export { passwordToken, scimClientToken } from './tokens';
export { freePlanPorts, prepareDatabases, runtimeUrls, type PostgresServer, type ServiceDatabases } from './system';
export { DEMO_PASSWORD, DEMO_SCIM_CLIENTS } from './demo-data';
