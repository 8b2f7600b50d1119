import * as grpc from '@grpc/grpc-js';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { usersV1 } from '@mileage/proto';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ARCHIVE_READ_MEMORY,
  ArchiveReadMemory,
  decodeArchiveRead,
  encodeArchiveRead,
  MAX_ARCHIVE_READ,
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

test('a read in the service’s memory is encoded in place to the same bytes, and its memory serves a later read', async () => {
  for (const sizeBytes of SIZES)
    for (const length of LENGTHS) {
      const data = ARCHIVE_READ_MEMORY.take(length);
      bytesOf(length).copy(data);
      const expected = Buffer.from(generated.encode({ data: Buffer.from(data), sizeBytes }).finish());
      const encoded = encodeArchiveRead({ data, sizeBytes });
      assert.deepEqual(encoded, expected, `${length} bytes of ${sizeBytes}`);
      assert.equal(encoded.buffer, data.buffer, 'written around the read, not copied');
      // Not lent again in the turn that encoded it (grpc-js copies it into its frame then), but in the next.
      const sameTurn = ARCHIVE_READ_MEMORY.take(1);
      assert.notEqual(sameTurn.buffer, data.buffer);
      ARCHIVE_READ_MEMORY.giveBack(sameTurn);
      await Promise.resolve();
      const later = ARCHIVE_READ_MEMORY.take(MAX_ARCHIVE_READ);
      assert.ok([data.buffer, sameTurn.buffer].includes(later.buffer), 'the memory came back');
      ARCHIVE_READ_MEMORY.giveBack(later);
    }
});

test('read memory: a length past one read is refused, memory given back twice or from elsewhere is ignored', () => {
  const memory = new ArchiveReadMemory(1);
  assert.throws(() => memory.take(MAX_ARCHIVE_READ + 1), /not an archive read's length/);
  assert.throws(() => memory.take(-1), /not an archive read's length/);
  const first = memory.take(10);
  const second = memory.take(10);
  assert.notEqual(first.buffer, second.buffer);
  assert.ok(memory.holds(first) && !memory.holds(Buffer.alloc(10)));
  memory.giveBack(first);
  memory.giveBack(first);
  memory.giveBack(second); // past what it keeps: left to the collector
  memory.giveBack(Buffer.alloc(10));
  assert.ok(!memory.holds(first), 'given back, it is no longer lent');
  assert.equal(memory.take(5).buffer, first.buffer);
  assert.notEqual(memory.take(5).buffer, second.buffer, 'it keeps one');
});

test('reads answered from the service’s memory arrive intact over a real gRPC connection, many at once', async () => {
  // Each read's bytes follow from its offset; memory reused before grpc-js had copied an answer would corrupt it.
  const pattern = (offset: number, length: number) => {
    const out = Buffer.allocUnsafe(length);
    for (let i = 0; i < length; i++) out[i] = ((offset + i) * 131 + (offset >> 10)) & 255;
    return out;
  };
  const server = new grpc.Server();
  server.addService(ORGANIZATIONS_SERVICE, {
    readExportArchive: (
      call: grpc.ServerUnaryCall<usersV1.ReadExportArchiveRequest, usersV1.ReadExportArchiveResponse>,
      callback: grpc.sendUnaryData<usersV1.ReadExportArchiveResponse>,
    ) => {
      const { offset, length } = call.request;
      const into = ARCHIVE_READ_MEMORY.take(length);
      setImmediate(() => {
        pattern(offset, length).copy(into);
        callback(null, { data: into, sizeBytes: 1 << 30 });
      });
    },
  } as unknown as grpc.UntypedServiceImplementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const client = new OrganizationsServiceClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const read = (offset: number, length: number) =>
    new Promise<usersV1.ReadExportArchiveResponse>((resolve, reject) =>
      client.readExportArchive({ id: 'x', offset, length }, (err, answer) => (err ? reject(err) : resolve(answer!))),
    );
  try {
    for (let round = 0; round < 4; round++) {
      const asked = Array.from({ length: 8 }, (_, i) => ({
        offset: (round * 8 + i) * MAX_ARCHIVE_READ,
        length: i % 3 === 0 ? MAX_ARCHIVE_READ : 1 + ((i * 77_777) % MAX_ARCHIVE_READ),
      }));
      const answers = await Promise.all(asked.map((a) => read(a.offset, a.length)));
      answers.forEach((answer, i) =>
        assert.ok(answer.data.equals(pattern(asked[i]!.offset, asked[i]!.length)), `read ${round}.${i}`),
      );
    }
  } finally {
    client.close();
    server.forceShutdown();
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
