// `npm run bench:grpc-call`: what one unary gRPC call costs on this machine, client and server apart, with nothing of
// ours around it. The same method and message (UsersService.GetUser answering one user) through grpc-js alone (its
// generated client, a bare grpc.Server) and through the platform's own client and server (createGrpcClient,
// startGrpcServer: deadline, request id, metrics, circuit breaker, error mapping). The server runs in a child
// process, plaintext, tracing off; calls one at a time and eight at once; the two kinds interleaved round by round.
// It is the floor every hop of the full path pays before any work (docs/benchmarks.md, "What one call costs").
import * as grpc from '@grpc/grpc-js';
import { PROTO_FILES, usersV1 } from '@mileage/proto';
import { AppError, createGrpcClient, startGrpcServer, type UnaryHandler } from '@mileage/runtime/grpc';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseFlags } from './cli';

const KINDS = ['grpc-js', 'platform'] as const;
type Kind = (typeof KINDS)[number];

/** The answer: a user as the account view carries it. */
const USER: usersV1.User = {
  id: 'DanaDrv001',
  userName: 'dana.driver@example.com',
  givenName: 'Dana',
  familyName: 'Driver',
  emails: [{ value: 'dana.driver@example.com', type: 'work', primary: true }],
  active: true,
  timezone: 'Europe/Berlin',
  version: 7,
  organizationId: 1,
  organizationAdmin: false,
} as usersV1.User;

/** Server side, in the child: serve `kind`, report the port, then answer every 'cpu' message with the CPU used. */
async function serve(kind: Kind): Promise<void> {
  const getUser = async () => ({ user: USER });
  let port: number;
  if (kind === 'grpc-js') {
    const server = new grpc.Server();
    server.addService(usersV1.UsersServiceService, {
      getUser: (_call: unknown, callback: grpc.sendUnaryData<usersV1.GetUserResponse>) =>
        callback(null, { user: USER }),
    } as unknown as grpc.UntypedServiceImplementation);
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
  } else {
    const unimplemented: UnaryHandler<unknown, never> = async () => {
      throw new AppError(grpc.status.UNIMPLEMENTED, 'not served by this bench');
    };
    const handlers = Object.fromEntries(
      Object.keys(usersV1.UsersServiceService).map((key) => [key, key === 'getUser' ? getUser : unimplemented]),
    );
    const server = await startGrpcServer({
      address: '127.0.0.1:0',
      services: [{ definition: usersV1.UsersServiceService, handlers: handlers as never }],
      protoFiles: [PROTO_FILES.users],
      logger: createLogger({ service: 'bench-grpc-call', level: 'warn' }),
      metrics: new Metrics('users'),
    });
    port = server.port;
  }
  // The bench's end is this server's: it never outlives the process that measures it.
  process.on('disconnect', () => process.exit(0));
  process.on('message', () => {
    const { user, system } = process.cpuUsage();
    process.send!({ cpuMicros: user + system });
  });
  process.send!({ port });
}

interface Figures {
  clientMicrosPerCall: number;
  serverMicrosPerCall: number;
  callsPerSecond: number;
}

/** A server child of `kind`, with its port and a reader of its CPU time. */
async function startChild(kind: Kind): Promise<{ port: number; cpuMicros(): Promise<number>; child: ChildProcess }> {
  const child = fork(__filename, ['--serve', kind], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // The child's next message; its exit instead fails the wait (the listener goes with the answer, not piling up).
  const next = () =>
    new Promise<Record<string, number>>((resolve, reject) => {
      const exited = (code: number | null) => reject(new Error(`the ${kind} server exited (${code})`));
      child.once('exit', exited);
      child.once('message', (m) => {
        child.off('exit', exited);
        resolve(m as Record<string, number>);
      });
    });
  const { port } = await next();
  return {
    port: port!,
    child,
    cpuMicros: async () => {
      const answer = next();
      child.send('cpu');
      return (await answer).cpuMicros!;
    },
  };
}

/** One call of `kind` to the server on `port`, as a promise. */
function caller(kind: Kind, port: number): { call(): Promise<unknown>; close(): void } {
  const address = `127.0.0.1:${port}`;
  if (kind === 'platform') {
    const client = createGrpcClient(usersV1.UsersServiceClient, address, {
      defaultDeadlineMs: 5_000,
      metrics: new Metrics('gateway'),
    });
    return { call: () => client.getUser({ id: USER.id, includeDeleted: false }, {}), close: () => client.close() };
  }
  const client = new usersV1.UsersServiceClient(address, grpc.credentials.createInsecure());
  return {
    call: () =>
      new Promise((resolve, reject) =>
        client.getUser(
          { id: USER.id, includeDeleted: false },
          new grpc.Metadata(),
          { deadline: Date.now() + 5_000 },
          (err, res) => (err ? reject(err) : resolve(res)),
        ),
      ),
    close: () => client.close(),
  };
}

/** `calls` calls, `concurrency` at a time: the CPU each side spent per call and the rate. */
async function measure(
  call: () => Promise<unknown>,
  serverCpu: () => Promise<number>,
  calls: number,
  concurrency: number,
): Promise<Figures> {
  let sent = 0;
  const worker = async () => {
    while (sent < calls) {
      sent++;
      await call();
    }
  };
  const server0 = await serverCpu();
  const client0 = process.cpuUsage();
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const client = process.cpuUsage(client0);
  const server = (await serverCpu()) - server0;
  return {
    clientMicrosPerCall: (client.user + client.system) / calls,
    serverMicrosPerCall: server / calls,
    callsPerSecond: calls / seconds,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const values = parseFlags('npm run bench:grpc-call --', {
    calls: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '3' },
    /** CI's check that the bench runs: few calls, one round. */
    smoke: { type: 'boolean', default: false },
  });
  if (values.smoke) Object.assign(values, { calls: '300', rounds: '1' });
  const calls = Number(values.calls);
  const rounds = Number(values.rounds);
  const servers = Object.fromEntries(await Promise.all(KINDS.map(async (k) => [k, await startChild(k)] as const)));
  const runs: Record<string, Figures[]> = {};
  try {
    for (let round = 0; round < rounds; round++) {
      for (const kind of KINDS) {
        const server = servers[kind]!;
        const client = caller(kind, server.port);
        try {
          // Warm-up: the connection, the JIT of both sides.
          for (let i = 0; i < Math.min(calls, 2_000); i++) await client.call();
          for (const concurrency of [1, 8]) {
            const key = `${kind}, ${concurrency} at a time`;
            (runs[key] ??= []).push(await measure(client.call, server.cpuMicros, calls, concurrency));
          }
        } finally {
          client.close();
        }
      }
    }
  } finally {
    for (const { child } of Object.values(servers)) child.kill();
  }
  const lines = [
    `One unary call (UsersService.GetUser, one user), ${calls} calls per measurement, ${rounds} round(s), ` +
      `medians; Node.js ${process.versions.node}, plaintext, server in a child process:`,
    '  client / calls               client CPU µs/call  server CPU µs/call  calls/s',
  ];
  const results: Record<string, Figures> = {};
  for (const [key, figures] of Object.entries(runs)) {
    const m: Figures = {
      clientMicrosPerCall: median(figures.map((f) => f.clientMicrosPerCall)),
      serverMicrosPerCall: median(figures.map((f) => f.serverMicrosPerCall)),
      callsPerSecond: median(figures.map((f) => f.callsPerSecond)),
    };
    results[key] = m;
    lines.push(
      `  ${key.padEnd(28)} ${m.clientMicrosPerCall.toFixed(0).padStart(18)} ${m.serverMicrosPerCall
        .toFixed(0)
        .padStart(19)} ${m.callsPerSecond.toFixed(0).padStart(8)}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  if (values.smoke) return; // a smoke run's figures are not results
  const dir = path.join(__dirname, '..', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'grpc-call.json'),
    JSON.stringify({ node: process.versions.node, calls, rounds, results, runs }, null, 2) + '\n',
  );
}

const serveAt = process.argv.indexOf('--serve');
if (serveAt >= 0) {
  serve(process.argv[serveAt + 1] as Kind).catch((err: unknown) => {
    process.stderr.write(`grpc-call bench server failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
} else {
  main().catch((err: unknown) => {
    process.stderr.write(`grpc-call bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
