import * as grpc from '@grpc/grpc-js';
import { usersV1 } from '@mileage/proto';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';

type ArchiveRead = usersV1.ReadExportArchiveResponse;

/** The fields of ReadExportArchiveResponse in users.proto: `data` (1, bytes) and `size_bytes` (2, int64). */
const DATA_TAG = (1 << 3) | WireType.LengthDelimited;
const SIZE_TAG = (2 << 3) | WireType.Varint;

const varintLength = (n: number) => {
  let bytes = 1;
  for (let rest = n; rest >= 128; rest = Math.floor(rest / 128)) bytes++;
  return bytes;
};

/** The most one ReadExportArchive answers (users.proto): the gateway asks again as its client drains the response. */
export const MAX_ARCHIVE_READ = 1024 * 1024;

/** Room before a read's bytes for the `data` field's tag and length, and after them for the `size_bytes` field. */
const HEAD_ROOM = 1 + varintLength(MAX_ARCHIVE_READ);
const TAIL_ROOM = 1 + varintLength(Number.MAX_SAFE_INTEGER);

/**
 * Memory for archive reads, each with room around its bytes, so that encodeArchiveRead writes the message around them
 * instead of copying them into a message of its own. Every fresh buffer of a download is memory that the process's
 * collector counts: with the read's, the answer's and grpc-js's frame of it, a download set off a full collection of
 * the Users service's heap about every 3 MB (72–75 in four downloads of 60 MiB: docs/benchmarks.md, "A download's reads
 * in memory of the Users service's own"). Now the frame is the only one. A read's memory is taken back once the answer
 * is encoded: grpc-js copies the encoded message into its frame in the same turn (`serializeMessage`), so nothing reads
 * it afterwards; the test that sends reads over a real connection would fail if grpc-js kept it. A read whose answer is
 * never encoded (a call cancelled, a read that failed and was not given back) is left to the collector.
 */
export class ArchiveReadMemory {
  private readonly free: ArrayBuffer[] = [];
  private readonly lent = new WeakSet<ArrayBuffer>();

  /** Keeps at most `keep` pieces of memory for the next reads (one per download running at once). */
  constructor(private readonly keep = 4) {}

  /** Memory for a read of `length` bytes (at most MAX_ARCHIVE_READ). */
  take(length: number): Buffer {
    if (!Number.isSafeInteger(length) || length < 0 || length > MAX_ARCHIVE_READ)
      throw new Error(`not an archive read's length: ${length}`);
    const memory = this.free.pop() ?? new ArrayBuffer(HEAD_ROOM + MAX_ARCHIVE_READ + TAIL_ROOM);
    this.lent.add(memory);
    return Buffer.from(memory, HEAD_ROOM, length);
  }

  /** The memory of a read taken from here (nothing for other memory, or memory already given back). */
  giveBack(read: Uint8Array): void {
    const memory = read.buffer as ArrayBuffer;
    if (!this.lent.delete(memory)) return;
    if (this.free.length < this.keep) this.free.push(memory);
  }

  /** Whether `read` lies in memory lent from here with room for the message around it. */
  holds(read: Uint8Array): boolean {
    return (
      this.lent.has(read.buffer as ArrayBuffer) &&
      read.byteOffset >= HEAD_ROOM &&
      read.byteOffset + read.length + TAIL_ROOM <= read.buffer.byteLength
    );
  }
}

/** The Users service's reads: taken by its ReadExportArchive handler, given back by encodeArchiveRead. */
export const ARCHIVE_READ_MEMORY = new ArchiveReadMemory();

/**
 * ReadExportArchiveResponse as protobuf: around `data` in place when it is memory of ARCHIVE_READ_MEMORY (which then
 * has it back), in one buffer of its exact size otherwise. The generated encoder grows its buffer by doubling from
 * 128 bytes and then copies the message out twice: for a MiB of archive, about 5 MiB of fresh memory. The same bytes
 * as the generated encoder's (archive-reads.test.ts).
 */
export function encodeArchiveRead(message: ArchiveRead): Buffer {
  const { data, sizeBytes } = message;
  if (!Number.isSafeInteger(sizeBytes) || sizeBytes < 0) throw new Error(`not an archive size: ${sizeBytes}`);
  const head = data.length ? 1 + varintLength(data.length) : 0;
  const length = head + data.length + (sizeBytes ? 1 + varintLength(sizeBytes) : 0);
  const inPlace = ARCHIVE_READ_MEMORY.holds(data);
  const out = inPlace ? Buffer.from(data.buffer, data.byteOffset - head, length) : Buffer.allocUnsafe(length);
  let at = 0;
  const varint = (n: number) => {
    let rest = n;
    while (rest >= 128) {
      out[at++] = (rest % 128) | 128;
      rest = Math.floor(rest / 128);
    }
    out[at++] = rest;
  };
  if (data.length) {
    out[at++] = DATA_TAG;
    varint(data.length);
    if (!inPlace) out.set(data, at);
    at += data.length;
  }
  if (sizeBytes) {
    out[at++] = SIZE_TAG;
    varint(sizeBytes);
  }
  // grpc-js copies the message into its frame before this turn ends; only then may the memory serve another read.
  if (inPlace) queueMicrotask(() => ARCHIVE_READ_MEMORY.giveBack(data));
  return out;
}

/**
 * ReadExportArchiveResponse from protobuf, its `data` a view of the message received rather than a copy of it (the
 * generated decoder copies it). Unknown fields are skipped, as the generated decoder does.
 */
export function decodeArchiveRead(message: Buffer): ArchiveRead {
  const reader = new BinaryReader(message);
  const decoded: ArchiveRead = { data: Buffer.alloc(0), sizeBytes: 0 };
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1 && wireType === WireType.LengthDelimited) {
      const bytes = reader.bytes();
      decoded.data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    } else if (field === 2 && wireType === WireType.Varint) decoded.sizeBytes = Number(reader.int64());
    else reader.skip(wireType);
  }
  return decoded;
}

/** The Users service's OrganizationsService with its archive reads coded by encodeArchiveRead and decodeArchiveRead. */
export const ORGANIZATIONS_SERVICE = {
  ...usersV1.OrganizationsServiceService,
  readExportArchive: {
    ...usersV1.OrganizationsServiceService.readExportArchive,
    responseSerialize: encodeArchiveRead,
    responseDeserialize: decodeArchiveRead,
  },
} as typeof usersV1.OrganizationsServiceService;

/** The client of ORGANIZATIONS_SERVICE (the generated one's twin, archive reads aside). */
export const OrganizationsServiceClient = grpc.makeGenericClientConstructor(
  ORGANIZATIONS_SERVICE,
  usersV1.OrganizationsServiceClient.serviceName,
) as unknown as typeof usersV1.OrganizationsServiceClient;
