/**
 * New replicas take their share: a client balancing over a name (as the gateway does over a headless Kubernetes
 * Service) reaches a replica added to that name within max(1.1 × maximum connection age, the client's least
 * re-resolution interval) plus a connection set-up, because servers close connections at their maximum age
 * (GOAWAY) and a closed connection makes the client resolve the name again. Two replicas, then three, on
 * 127.0.0.1-3 behind one name served by a DNS server on loopback; no call fails while connections are recycled.
 * REBALANCE_AGE_MS / REBALANCE_RESOLVE_MS run it with other figures (docs/operations.md has the production ones).
 */
import './rebalance.env';
import { usersV1, PROTO_FILES } from '@mileage/proto';
import { stubUser } from './users-stub.fixture';
import assert from 'node:assert/strict';
import * as dgram from 'node:dgram';
import { test } from 'node:test';
import { createGrpcClient } from './grpc-client';
import { startGrpcServer, type GrpcServerHandle, type Handlers } from './grpc-server';
import { createLogger } from '../telemetry/logger';
import { Metrics } from '../telemetry/metrics';
import { freePort } from '../config/net';
import { waitFor } from '../testing';

const AGE_MS = Number(process.env.REBALANCE_AGE_MS ?? 3_000);
const GRACE_MS = 1_000;
const RESOLVE_MS = Number(process.env.REBALANCE_RESOLVE_MS ?? 1_000);
const NAME = 'users.mileage.test';
const logger = createLogger({ service: 'rebalance-test', level: 'silent' });

/** A DNS server answering A queries for one name with a list of addresses that the test changes. */
async function startDnsServer(addresses: string[]): Promise<{ port: number; close(): void }> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (query, peer) => {
    let offset = 12;
    const labels: string[] = [];
    while (query[offset]! > 0) {
      labels.push(query.subarray(offset + 1, offset + 1 + query[offset]!).toString('ascii'));
      offset += query[offset]! + 1;
    }
    const question = query.subarray(12, offset + 5);
    const type = query.readUInt16BE(offset + 1);
    const known = labels.join('.').toLowerCase() === NAME;
    const answers = known && type === 1 ? addresses : [];
    const header = Buffer.alloc(12);
    header.writeUInt16BE(query.readUInt16BE(0), 0);
    header.writeUInt16BE(0x8580 | (known ? 0 : 3), 2); // response, authoritative, recursion; NXDOMAIN if unknown
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    const records = answers.map((address) => {
      const record = Buffer.alloc(16);
      record.writeUInt16BE(0xc00c, 0); // the name in the question
      record.writeUInt16BE(1, 2); // A
      record.writeUInt16BE(1, 4); // IN
      record.writeUInt32BE(0, 6); // TTL 0: clients must ask again
      record.writeUInt16BE(4, 10);
      address.split('.').forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
      return record;
    });
    socket.send(Buffer.concat([header, question, ...records]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { port: socket.address().port, close: () => socket.close() };
}

async function startReplica(host: string, port: number): Promise<GrpcServerHandle> {
  const handlers = new Proxy({} as Handlers<usersV1.UsersServiceServer>, {
    get: () => async () => ({
      user: stubUser(host, host),
    }),
  });
  return startGrpcServer({
    address: `${host}:${port}`,
    services: [{ definition: usersV1.UsersServiceService, handlers: handlers as never }],
    protoFiles: [PROTO_FILES.users],
    logger,
    metrics: new Metrics('users'),
    maxConnectionAgeMs: AGE_MS,
    maxConnectionAgeGraceMs: GRACE_MS,
  });
}

test(
  'a third replica added behind the name serves its share within the bound, and no call fails',
  { timeout: 60_000 + 4 * Math.max(AGE_MS, RESOLVE_MS) },
  async (t) => {
    const port = await freePort();
    const addresses = ['127.0.0.1', '127.0.0.2'];
    const dns = await startDnsServer(addresses);
    const replicas = [await startReplica('127.0.0.1', port), await startReplica('127.0.0.2', port)];
    const client = createGrpcClient(usersV1.UsersServiceClient, `dns://127.0.0.1:${dns.port}/${NAME}:${port}`, {
      defaultDeadlineMs: 2_000,
      minResolveIntervalMs: RESOLVE_MS,
    });
    const served: { at: number; by: string }[] = [];
    const failures: string[] = [];
    let running = true;
    const worker = async () => {
      while (running) {
        try {
          const { user } = await client.getUser({ id: 'x', includeDeleted: false });
          served.push({ at: Date.now(), by: user!.id });
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    };
    const workers = Array.from({ length: 4 }, worker);
    t.after(async () => {
      running = false;
      await Promise.all(workers);
      client.close();
      dns.close();
      await Promise.all(replicas.map((r) => r.shutdown(1_000)));
    });
    const shareOf = (host: string, last: number) =>
      served.slice(-last).filter((s) => s.by === host).length / Math.min(last, served.length);

    // Two replicas share the calls.
    await waitFor(() => served.length > 400 && shareOf('127.0.0.2', 400) > 0.35, {
      timeoutMs: 60_000,
      what: 'two replicas in use',
    });

    // A third one starts and its address is published (a pod turning ready behind a headless Service).
    replicas.push(await startReplica('127.0.0.3', port));
    addresses.push('127.0.0.3');
    const added = Date.now();
    const bound = Math.max(1.1 * AGE_MS, RESOLVE_MS) + 2_000;
    await waitFor(() => served.some((s) => s.at > added && s.by === '127.0.0.3'), {
      timeoutMs: bound * 2,
      intervalMs: 10,
      what: 'first call on the new replica',
    });
    const firstCallMs = Date.now() - added;
    const countAtFirst = served.length;
    // Its share over the next 600 calls: about a third.
    await waitFor(() => served.length >= countAtFirst + 600, { timeoutMs: 60_000, what: '600 more calls' });
    const share = shareOf('127.0.0.3', 600);
    t.diagnostic(
      `age ${AGE_MS} ms, re-resolution ≥ ${RESOLVE_MS} ms: new replica's first call after ${firstCallMs} ms ` +
        `(bound ${bound} ms), then ${(share * 100).toFixed(1)} % of the calls; ${served.length} calls, ` +
        `${failures.length} failed`,
    );
    assert.ok(firstCallMs <= bound, `the new replica was first used after ${firstCallMs} ms, bound ${bound} ms`);
    assert.ok(share > 0.25, `the new replica served ${(share * 100).toFixed(1)} % of the calls, expected about 33 %`);
    assert.deepEqual(failures, [], 'no call fails while servers recycle connections');
  },
);
