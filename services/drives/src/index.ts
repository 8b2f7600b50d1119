export { createServer, type DrivesServerDeps } from './server';
export { openDatabase, SCHEMA } from './database';
export { DriveReads, DrivesRepository } from './drives-repo';
export { EXPORT_REPORTED_DRIVES_SQL } from './statements';
export { EXPORT_PAGE_ROWS, exportReportedDrivesPageSql } from './export-pages';
export { ERASURE_PLAN } from './erasure-plan';
export { CURRENT_EPOCH_SQL } from './restore-epoch';
