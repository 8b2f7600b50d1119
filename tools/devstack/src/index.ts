export { generateVolume } from './volume';
export { launchStack, type LaunchedStack } from './launch';
export { letPostgresReach } from './postgres-access';
export { provisionServiceRoles } from './postgres';
