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

/**
 * ReadExportArchiveResponse as protobuf, in one buffer of its exact size. The generated encoder grows its buffer by
 * doubling from 128 bytes and then copies the message out twice: for a MiB of archive, about 5 MiB of fresh memory,
 * and every few MiB a full collection of the serving process's heap (docs/benchmarks.md, "An organization exported").
 * The same bytes as the generated encoder's (archive-reads.test.ts).
 */
export function encodeArchiveRead(message: ArchiveRead): Buffer {
  const { data, sizeBytes } = message;
  if (!Number.isSafeInteger(sizeBytes) || sizeBytes < 0) throw new Error(`not an archive size: ${sizeBytes}`);
  const length =
    (data.length ? 1 + varintLength(data.length) + data.length : 0) + (sizeBytes ? 1 + varintLength(sizeBytes) : 0);
  const out = Buffer.allocUnsafe(length);
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
    out.set(data, at);
    at += data.length;
  }
  if (sizeBytes) {
    out[at++] = SIZE_TAG;
    varint(sizeBytes);
  }
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
