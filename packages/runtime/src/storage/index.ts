export {
  checkKey,
  LocalArchiveStore,
  readInChunks,
  type ArchiveStore,
  type ByteRange,
  type StoredObject,
} from './archive-store';
export { archiveStoreConfigShape, archiveStoreOf } from './config';
export {
  EXPORT_GZIP,
  exportPartKey,
  PageBytes,
  writeExportFiles,
  writeExportPart,
  type ExportFileSpec,
  type ExportFilesPage,
  type ExportPartFile,
} from './part';
export { S3ArchiveStore, type S3StoreOptions } from './s3-archive-store';
export { enterIdleScheduling, SCHED_IDLE, schedulingPolicy } from './idle-thread';
export { pagesInWorker, RENDERING_PRIORITY, type PagesWorkerTask } from './pages-worker';
