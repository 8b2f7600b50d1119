import * as grpc from '@grpc/grpc-js';
import { status, type ServiceError } from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PROTO_FILES, usersV1 } from '@mileage/proto';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { decodeServiceError, errors } from './errors';
import { createGrpcClient, grpcCallOf, grpcFailureOf } from './grpc-client';
import { startGrpcServer } from './grpc-server';
import { createLogger } from '../telemetry/logger';
import { Metrics } from '../telemetry/metrics';
import { usersServiceStub, stubUser } from './users-stub.fixture';

const logger = createLogger({ service: 'grpc-test', level: 'silent' });

/** A Users service on a free loopback port answering with `handlers`, and a client to it. */
async function serveUsers(handlers: Parameters<typeof usersServiceStub>[0], defaultDeadlineMs = 5_000) {
  const server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [{ definition: usersV1.UsersServiceService, handlers: usersServiceStub(handlers) as never }],
    protoFiles: [PROTO_FILES.users],
    logger,
    metrics: new Metrics('t'),
  });
  const client = createGrpcClient(usersV1.UsersServiceClient, `127.0.0.1:${server.port}`, { defaultDeadlineMs });
  return { server, client };
}

describe('gRPC bootstrap', () => {
  test('shutdown lets in-flight calls finish and refuses new ones', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const seen: string[] = [];
    const { server, client } = await serveUsers({
      getUser: async (req, ctx) => {
        seen.push(ctx.requestId);
        entered();
        await gate;
        return {
          user: stubUser(req.id),
        };
      },
    });
    const inFlight = client.getUser({ id: 'AliceAdm01', includeDeleted: false }, { requestId: 'req-123' });
    await inside;
    const stopping = server.shutdown(5_000);
    release();
    const { user } = await inFlight;
    assert.equal(user?.id, 'AliceAdm01');
    await stopping;
    assert.deepEqual(seen, ['req-123'], 'the request id travels as metadata');
    await assert.rejects(
      client.getUser({ id: 'AliceAdm01', includeDeleted: false }),
      (err: ServiceError) => err.code === status.UNAVAILABLE,
    );
    client.close();
  });

  test('calls are balanced round-robin over every address the target resolves to (a headless Service)', async () => {
    const counts = [0, 0];
    const servers = await Promise.all(
      counts.map((_, i) =>
        startGrpcServer({
          address: '127.0.0.1:0',
          services: [
            {
              definition: usersV1.UsersServiceService,
              handlers: usersServiceStub({ batchGetUsers: async () => (counts[i]!++, { users: [] }) }) as never,
            },
          ],
          protoFiles: [PROTO_FILES.users],
          logger,
          metrics: new Metrics('t'),
        }),
      ),
    );
    const client = createGrpcClient(
      usersV1.UsersServiceClient,
      `ipv4:${servers.map((s) => `127.0.0.1:${s.port}`).join(',')}`,
      { defaultDeadlineMs: 5_000 },
    );
    try {
      for (let i = 0; i < 20; i++) await client.batchGetUsers({ ids: [] });
      assert.ok(counts[0]! >= 5 && counts[1]! >= 5, `both replicas served calls: ${counts.join(' / ')}`);
    } finally {
      client.close();
      for (const s of servers) await s.shutdown(1_000);
    }
  });

  test('AppErrors keep their code and details; anything else is INTERNAL without its message', async () => {
    const { server, client } = await serveUsers({
      getUser: async () => {
        throw errors.invalidArgument('bad', [{ field: 'id', description: 'invalid user id' }]);
      },
      batchGetUsers: async () => {
        throw new Error('relation "users" does not exist');
      },
    });
    try {
      const invalid = await client
        .getUser({ id: 'x', includeDeleted: false })
        .catch((e: ServiceError) => decodeServiceError(e));
      assert.equal((invalid as ReturnType<typeof decodeServiceError>).code, status.INVALID_ARGUMENT);
      assert.deepEqual((invalid as ReturnType<typeof decodeServiceError>).fieldViolations, [
        { field: 'id', description: 'invalid user id' },
      ]);
      const internal = await client.batchGetUsers({ ids: [] }).catch((e: ServiceError) => decodeServiceError(e));
      assert.equal((internal as ReturnType<typeof decodeServiceError>).code, status.INTERNAL);
      assert.equal((internal as ReturnType<typeof decodeServiceError>).message, 'internal error');
    } finally {
      client.close();
      await server.shutdown(1_000);
    }
  });

  test('every call carries a deadline', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { server, client } = await serveUsers({ getUser: async () => (await gate, {}) }, 200);
    try {
      await assert.rejects(
        client.getUser({ id: 'AliceAdm01', includeDeleted: false }),
        (err: ServiceError) => err.code === status.DEADLINE_EXCEEDED,
      );
      // A failed call's error names the call, for the log line of the request it fails.
      const failed = await client.getUser({ id: 'AliceAdm01', includeDeleted: false }).catch((e: unknown) => e);
      assert.deepEqual(grpcCallOf(failed), { grpc_service: 'mileage.users.v1.UsersService', grpc_method: 'GetUser' });
      assert.deepEqual(grpcCallOf(new Error('not a call')), {});
      // Its log fields, as the gateway and the bench's servers write them.
      const { grpc_details, ...fields } = grpcFailureOf(failed);
      assert.deepEqual(fields, {
        grpc_service: 'mileage.users.v1.UsersService',
        grpc_method: 'GetUser',
        grpc_code: 'DEADLINE_EXCEEDED',
      });
      // grpc-js's words for the deadline: "…after N s" when the client's timer ends the call, bare when the server's
      // (the same deadline, propagated) answers first — a race either side may win.
      assert.match(grpc_details ?? '', /^Deadline exceeded( after |$)/);
      assert.deepEqual(grpcFailureOf(new Error('not a call')), {});
    } finally {
      release();
      client.close();
      await server.shutdown(1_000);
    }
  });

  test("a call does not capture its caller's stack, and a request that never left keeps a stack", async () => {
    const { server, client } = await serveUsers({
      getUser: async () => {
        throw errors.notFound('no such user');
      },
    });
    try {
      const limit = Error.stackTraceLimit;
      const failed = (await client.getUser({ id: 'AliceAdm01', includeDeleted: false }).catch((e) => e)) as Error;
      assert.equal((failed as ServiceError).code, status.NOT_FOUND);
      // grpc-js appends the stack it captured when the call started; none was.
      assert.match(failed.stack ?? '', /for call at\nno stack trace available/);
      assert.equal(Error.stackTraceLimit, limit);
      // A request that does not serialise is thrown before it is sent: the limit is restored and its error says
      // where the call was made.
      await assert.rejects(client.getUser({ id: 42 as unknown as string, includeDeleted: false }), (err: Error) =>
        /\n\s+at /.test(err.stack ?? ''),
      );
      assert.equal(Error.stackTraceLimit, limit);
    } finally {
      client.close();
      await server.shutdown(1_000);
    }
  });

  test("a handler's signal aborts when its caller gives up, and never after the call was answered", async () => {
    let answeredSignal: AbortSignal | undefined;
    let abortedInside!: () => void;
    const sawAbort = new Promise<void>((resolve) => (abortedInside = resolve));
    const { server, client } = await serveUsers(
      {
        getUser: async (req, ctx) => {
          if (req.id === 'AliceAdm01') {
            answeredSignal = ctx.signal;
            return { user: stubUser(req.id) };
          }
          // Waits for the caller's deadline, which only the signal reports.
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
          abortedInside();
          return {};
        },
      },
      200,
    );
    try {
      const { user } = await client.getUser({ id: 'AliceAdm01', includeDeleted: false });
      assert.equal(user?.id, 'AliceAdm01');
      // grpc-js reports every call as cancelled once its status is out; an answered call's signal stays quiet.
      assert.equal(answeredSignal?.aborted, false);
      await assert.rejects(
        client.getUser({ id: 'BobDriver1', includeDeleted: false }),
        (err: ServiceError) => err.code === status.DEADLINE_EXCEEDED,
      );
      await sawAbort;
    } finally {
      client.close();
      await server.shutdown(1_000);
    }
  });

  test('server reflection is off unless asked for', async () => {
    const start = (reflection?: boolean) =>
      startGrpcServer({
        address: '127.0.0.1:0',
        services: [{ definition: usersV1.UsersServiceService, handlers: usersServiceStub({}) as never }],
        protoFiles: [PROTO_FILES.users],
        logger,
        metrics: new Metrics('t'),
        ...(reflection === undefined ? {} : { reflection }),
      });
    const [byDefault, off, on] = await Promise.all([start(), start(false), start(true)]);
    try {
      for (const server of [byDefault, off]) {
        await assert.rejects(listServices(server.port), (err: ServiceError) => err.code === status.UNIMPLEMENTED);
      }
      const listed = await listServices(on.port);
      assert.ok(listed.includes('mileage.users.v1.UsersService'), listed.join(', '));
      assert.ok(listed.includes('grpc.health.v1.Health'), listed.join(', '));
    } finally {
      await Promise.all([byDefault, off, on].map((s) => s.shutdown(1_000)));
    }
  });
});

/** The services a server lists through grpc.reflection.v1 (what grpcurl asks first). */
async function listServices(port: number): Promise<string[]> {
  const proto = path.join(
    path.dirname(require.resolve('@grpc/reflection')),
    '..',
    'proto',
    'grpc',
    'reflection',
    'v1',
    'reflection.proto',
  );
  const loaded = grpc.loadPackageDefinition(protoLoader.loadSync(proto, { keepCase: true })) as unknown as {
    grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } };
  };
  const client = new loaded.grpc.reflection.v1.ServerReflection(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    return await new Promise<string[]>((resolve, reject) => {
      const call = (
        client as unknown as {
          ServerReflectionInfo(options: Partial<grpc.CallOptions>): grpc.ClientDuplexStream<unknown, unknown>;
        }
      ).ServerReflectionInfo({ deadline: Date.now() + 5_000 });
      call.on('data', (res: { list_services_response?: { service: { name: string }[] } }) => {
        resolve(res.list_services_response?.service.map((s) => s.name) ?? []);
        call.end();
      });
      call.on('error', reject);
      call.write({ list_services: '*' });
    });
  } finally {
    client.close();
  }
}
