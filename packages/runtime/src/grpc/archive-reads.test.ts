import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { usersV1 } from '@mileage/proto';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeArchiveRead,
  encodeArchiveRead,
  ORGANIZATIONS_SERVICE,
  OrganizationsServiceClient,
} from './archive-reads';

const generated = usersV1.ReadExportArchiveResponse;
const bytesOf = (length: number) => Buffer.from(Array.from({ length }, (_, i) => (i * 31 + 7) % 256));
const SIZES = [0, 1, 127, 128, 16_383, 16_384, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER];
const LENGTHS = [0, 1, 127, 128, 16_384, 1024 * 1024];

test('an archive read is encoded to the generated encoder’s bytes', () => {
  for (const sizeBytes of SIZES)
    for (const length of LENGTHS) {
      const message = { data: bytesOf(length), sizeBytes };
      assert.deepEqual(
        encodeArchiveRead(message),
        Buffer.from(generated.encode(message).finish()),
        `${length} bytes of ${sizeBytes}`,
      );
    }
});

test('an archive read is decoded as the generated decoder does, its data a view of the message, not a copy', () => {
  for (const sizeBytes of SIZES)
    for (const length of [0, 1, 128, 1024 * 1024]) {
      const wire = Buffer.from(generated.encode({ data: bytesOf(length), sizeBytes }).finish());
      const ours = decodeArchiveRead(wire);
      assert.deepEqual(ours, generated.decode(wire));
      if (length) assert.equal(ours.data.buffer, wire.buffer, 'the data shares the message’s memory');
    }
});

test('fields the decoder does not know are skipped, as the generated decoder skips them', () => {
  const writer = new BinaryWriter();
  writer.uint32((7 << 3) | 0).uint64(12345);
  writer.uint32(10).bytes(bytesOf(300));
  writer.uint32((8 << 3) | 2).string('a later field');
  writer.uint32((9 << 3) | 5).fixed32(9);
  writer.uint32((10 << 3) | 1).fixed64(10);
  writer.uint32(16).int64(5_000_000);
  const wire = Buffer.from(writer.finish());
  assert.deepEqual(decodeArchiveRead(wire), generated.decode(wire));
  assert.deepEqual(decodeArchiveRead(wire), { data: bytesOf(300), sizeBytes: 5_000_000 });
});

test('the codec knows every field of ReadExportArchiveResponse (a field added to users.proto fails here)', () => {
  assert.deepEqual(Object.keys(generated.fromPartial({})).sort(), ['data', 'sizeBytes']);
});

test('a size that is not a whole non-negative number is refused rather than encoded wrong', () => {
  for (const sizeBytes of [-1, 1.5, Number.MAX_SAFE_INTEGER + 2])
    assert.throws(() => encodeArchiveRead({ data: Buffer.alloc(0), sizeBytes }), /not an archive size/);
});

test('the service and its client are the generated ones but for the archive reads’ coding', () => {
  const ours = ORGANIZATIONS_SERVICE as unknown as Record<string, Record<string, unknown>>;
  const theirs = usersV1.OrganizationsServiceService as unknown as Record<string, Record<string, unknown>>;
  assert.deepEqual(Object.keys(ours), Object.keys(theirs));
  for (const [method, definition] of Object.entries(theirs)) {
    const coded = ['responseSerialize', 'responseDeserialize'];
    for (const [key, value] of Object.entries(definition))
      if (method !== 'readExportArchive' || !coded.includes(key)) assert.equal(ours[method]![key], value, method + key);
  }
  assert.equal(ours.readExportArchive!.responseSerialize, encodeArchiveRead);
  assert.equal(ours.readExportArchive!.responseDeserialize, decodeArchiveRead);
  assert.equal(OrganizationsServiceClient.serviceName, usersV1.OrganizationsServiceClient.serviceName);
  assert.equal(OrganizationsServiceClient.service, ORGANIZATIONS_SERVICE);
});
