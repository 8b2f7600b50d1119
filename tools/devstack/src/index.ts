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
  wireStack,
  withDatabase,
  type Component,
  type ServiceName,
  type StackEnvironment,
  type StackPlan,
} from './wiring';
export { passwordToken, scimClientToken } from './tokens';
export { DEMO_PASSWORD, DEMO_SCIM_CLIENTS } from './demo-data';
