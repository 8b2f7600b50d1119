import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { checkKey, measured, type ArchiveStore, type ByteRange, type StoredObject } from './archive-store';

/** Where the archives are: an S3-compatible endpoint (AWS S3, MinIO, SeaweedFS, …) and its bucket. */
export interface S3StoreOptions {
  bucket: string;
  /** Unset: AWS S3 itself. */
  endpoint?: string;
  region: string;
  /** Path-style URLs (endpoint/bucket/key): what most self-hosted servers need. */
  forcePathStyle?: boolean;
  /** Unset: the SDK's default chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a web identity, …). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** How long a connection may stay silent before the request fails (default 60 s): idle time, not the total. */
  idleTimeoutMs?: number;
}

/** 8 MiB parts, two in flight: what an upload holds in memory whatever the archive's size. */
const PART_BYTES = 8 * 1024 * 1024;

/**
 * Objects in an S3-compatible bucket. `put` is a multipart upload: the object exists only once the upload completes,
 * and a failed one is aborted (its parts deleted), so nothing partial is ever read, as on local disk.
 */
export class S3ArchiveStore implements ArchiveStore {
  private readonly client: S3Client;

  constructor(private readonly options: S3StoreOptions) {
    this.client = new S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      forcePathStyle: options.forcePathStyle ?? false,
      ...(options.credentials ? { credentials: options.credentials } : {}),
      // A store that does not answer fails the job instead of holding it: a connection not made within 10 s, or
      // silent for idleTimeoutMs (idle, so a large part streamed slowly is not cut), fails the attempt.
      maxAttempts: 3,
      requestHandler: {
        connectionTimeout: 10_000,
        requestTimeout: options.idleTimeoutMs ?? 60_000,
        throwOnRequestTimeout: true,
      },
    });
  }

  async put(key: string, body: AsyncIterable<Uint8Array>): Promise<StoredObject> {
    const counted = { sizeBytes: 0, hash: createHash('sha256') };
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.options.bucket, Key: checkKey(key), Body: Readable.from(copied(measured(body, counted))) },
      partSize: PART_BYTES,
      queueSize: 2,
      leavePartsOnError: false,
    });
    await upload.done();
    return { sizeBytes: counted.sizeBytes, sha256: counted.hash.digest('hex') };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    try {
      const answer = await this.client.send(
        new GetObjectCommand({
          Bucket: this.options.bucket,
          Key: checkKey(key),
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      return answer.Body as Readable;
    } catch (err) {
      throw missing(err) ? Object.assign(new Error(`no archive object ${key}`), { code: 'ENOENT' }) : err;
    }
  }

  async read(key: string, range: ByteRange, into: Uint8Array): Promise<number> {
    const wanted = Math.min(into.length, range.end + 1 - range.start);
    if (wanted <= 0) return 0;
    let done = 0;
    // Leaving the loop early (a store answering more than the range) ends the response's stream.
    for await (const chunk of await this.get(key, { start: range.start, end: range.start + wanted - 1 })) {
      const bytes = (chunk as Uint8Array).subarray(0, wanted - done);
      into.set(bytes, done);
      done += bytes.length;
      if (done === wanted) break;
    }
    return done;
  }

  async size(key: string): Promise<number | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.options.bucket, Key: checkKey(key) }));
      return head.ContentLength;
    } catch (err) {
      if (missing(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key: checkKey(key) }));
  }

  /** Closes the client's connections. */
  close(): void {
    this.client.destroy();
  }
}

/**
 * Each chunk in memory of its own: the upload gathers chunks into a part and holds them until the part is sent, well
 * after it asks for the next, and the writer may use a chunk's memory again by then (ArchiveStore.put).
 */
async function* copied(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  for await (const chunk of chunks) yield Buffer.from(chunk);
}

function missing(err: unknown): boolean {
  return (
    err instanceof S3ServiceException &&
    (err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata.httpStatusCode === 404)
  );
}
