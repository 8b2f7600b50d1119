export { type DependencyCheck, DependencyMonitor, type DependencyReport, grpcHealthCheck } from './dependencies';
export { runProcess } from './process';
export {
  type BackgroundTask,
  type OpenDatabase,
  runEvery,
  runMigrations,
  runService,
  serviceConfigSchema,
  databaseConfigShape,
  type ServiceConfig,
  type ServiceContext,
  serviceDatabase,
} from './service';
export { handleShutdown } from './shutdown';
