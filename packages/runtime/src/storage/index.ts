export { checkKey, LocalArchiveStore, type ArchiveStore, type ByteRange, type StoredObject } from './archive-store';
