export { checkKey, LocalArchiveStore, type ArchiveStore, type ByteRange, type StoredObject } from './archive-store';
export { S3ArchiveStore, type S3StoreOptions } from './s3-archive-store';
