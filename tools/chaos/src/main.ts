// `npm run chaos`: the fault suite. Two replicas of each service and two gateways on loopback under steady load, then
// one fault after the other — a rolling restart, a key rotation, dropped database connections, a PostgreSQL restart, a
// frozen replica, Redis stopped, the identity provider's JWKS down — each judged against what docs/operations.md
// promises; and one organization's flood beside another's ordinary load (the noisy neighbour). Prints the table; exits 1 when a required expectation failed. `--short`: a few seconds per fault (a quick check; CI runs the full suite).
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { httpOk } from '@mileage/devstack';
import { MAX_RECONNECT_BACKOFF_MS } from '@mileage/runtime/grpc';
import { ACTIVE_WINDOW_MS } from '@mileage/gateway/fair-share';
import pg from 'pg';
import { Endpoints, Load, type Request } from './load';
import {
  allSucceed,
  keyRotation,
  postgresRestart,
  replicaFrozen,
  rollingRestart,
  secretTokenProblems,
  serviceFrozen,
  unknownKeyWhileJwksDown,
} from './expectations';
import {
  judgeNoisyNeighbour,
  noisyNeighbourAccounts,
  noisyNeighbourRows,
  formatVerdict,
  runNoisyNeighbour,
  seedNoisyNeighbours,
} from './noisy-neighbour';
import { playRoguePod, type RogueRun } from './rogue';
import { rotationSteps } from './rotation';
import { exerciseSecretTokens } from './scim-tokens';
import {
  exitCode,
  failureEvidence,
  formatTable,
  is2xx,
  judge,
  window,
  type Expectation,
  type Row,
  type Sample,
} from './report';
import {
  GATEWAY_TIMING,
  SCIM_TOKEN_CACHE_SECONDS,
  SCOPES,
  SERVICES,
  startChaosStack,
  type ChaosStack,
  type Replica,
  type ReplicaId,
} from './stack';

const { values } = parseArgs({
  options: {
    short: { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '12' },
    /**
     * Some faults only, by key: tokens, noisy, rogue, rolling, rotation, drops, postgres, freeze, redis, jwks (the baseline always
     * runs). `--short` leaves out rotation (three rolling restarts: over a minute) unless it is named here.
     */
    only: { type: 'string' },
    /** A folder to keep each replica's log in (level info), to find out why a request failed. */
    logs: { type: 'string' },
  },
});
const FAULTS = [
  'tokens',
  'noisy',
  'rogue',
  'rolling',
  'rotation',
  'drops',
  'postgres',
  'freeze',
  'redis',
  'jwks',
] as const;
const only = values.only?.split(',').map((f) => f.trim());
const unknown = only?.filter((f) => !(FAULTS as readonly string[]).includes(f));
if (unknown?.length) {
  process.stderr.write(`--only: unknown fault ${unknown.join(', ')} (known: ${FAULTS.join(', ')})\n`);
  process.exit(2);
}
const short = values.short;
/** Too long for the short run's budget in CI: run when named, or in the full run. */
const LONG_FAULTS: readonly string[] = ['rotation'];
const wanted = (fault: (typeof FAULTS)[number]) =>
  only ? only.includes(fault) : !(short && LONG_FAULTS.includes(fault));
/** Seconds of each phase: the short mode's for CI, the full run's for the documented table. */
const T = short
  ? {
      baseline: 3,
      // 100 quiet answers alone at least, half on each side of the flood (noisy-neighbour.ts, NOISY_RULES).
      noisyQuiet: 4,
      noisyFlood: 4,
      afterRoll: 2,
      drops: 4,
      dropEvery: 1.5,
      pgDown: 2,
      freeze: 3,
      redisDown: 3,
      jwksDown: 3,
      after: 2,
    }
  : {
      baseline: 10,
      // Seconds alone on each side of the flood, and beside it: 1,000 quiet answers alone and 1,125 beside, enough
      // that a few slow answers do not move either p99 (docs/operations.md, "Faults, measured", item 10).
      noisyQuiet: 20,
      noisyFlood: 45,
      afterRoll: 5,
      drops: 15,
      dropEvery: 3,
      pgDown: 5,
      freeze: 10,
      redisDown: 10,
      jwksDown: 10,
      after: 5,
    };
/** The chart's preStop pause (preStopSleepSeconds) in miniature: SIGTERM comes this long after a pod leaves its Service. */
const PRE_STOP_MS = short ? 500 : 2_000;
/**
 * By when every gRPC caller has retried a restarted replica's address: the longest reconnect backoff and its ±20 %
 * jitter. A Kubernetes pod's replacement has a new address, which callers connect to without a backoff; here the
 * replacement reuses the old one.
 */
const RECONNECT_BOUND_MS = MAX_RECONNECT_BACKOFF_MS * 1.2;
/** How long after PostgreSQL is back its 503s are still expected: the services' checks run every 2 s. */
const RECOVERY_MS = 5_000;

const log = (msg: string) => process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/**
 * The noisy neighbour: the quiet organization's requests a second, the noisy one's in flight (the issue measured 20
 * concurrent SCIM lists), a bound on them, and its organization's size (Globex's in the issue: 2,400 users).
 */
const NOISY = {
  quietRate: 25,
  noisyConcurrency: 20,
  noisyMaxRequests: 20_000,
  retryPauseCapMs: 500,
  seed: { noisyUsers: 2_400, noisyDrives: 8_000 },
};

async function main(): Promise<void> {
  log(`starting the stack (${short ? 'short' : 'full'} run)`);
  // The noisy neighbour's organizations are seeded when its row runs; their users sign in at the stack's provider.
  const noisyAccounts = noisyNeighbourAccounts();
  const stack = await startChaosStack({
    users: 400,
    drives: 8_000,
    log,
    logDir: values.logs,
    accounts: noisyAccounts,
  });
  // Ctrl-C: every process of the stack stopped and the work folder removed, as at the end of a run.
  process.once('SIGINT', () => void stack.stop().finally(() => process.exit(130)));
  let load: Load | undefined;
  const rows: Row[] = [];
  try {
    const gatewayUrls = [stack.gateways.a.url, stack.gateways.b.url];
    const endpoints = new Endpoints(gatewayUrls, (url) => httpOk(`${url}/readyz`));
    endpoints.watch(200);
    load = new Load(endpoints, mixOf(stack));
    load.start(Number(values.concurrency));
    let samples = load.samples;
    const phase = async (
      fault: string,
      expectation: Expectation,
      run: () => Promise<void>,
      extra?: (from: number, to: number) => Row[],
    ) => {
      await settle(samples);
      log(`fault: ${fault}`);
      const from = Date.now();
      await run();
      const to = Date.now();
      const inWindow = window(samples, from, to);
      const row = judge(fault, expectation, inWindow, from);
      rows.push(row, ...(extra?.(from, to) ?? []));
      log(`  ${row.requests} requests, ${row.failed} failed, p99 ${row.p99Ms} ms: ${row.verdict}`);
      if (row.verdict !== 'pass') {
        const failed = inWindow.filter((s) => !expectation.accepts(s));
        const notable = everyReplica(stack).flatMap((replica) =>
          replica.notable(from - 1_000, to + 1_000).map((line) => ({ replica: replica.name, line })),
        );
        for (const line of failureEvidence(failed, notable, from)) log(`  ${line}`);
      }
    };

    await phase('none (baseline)', allSucceed('every request 2xx'), () => sleep(T.baseline * 1000));

    if (wanted('tokens')) {
      // Not a fault: the rotation of a SCIM secret token under the same load, judged on what both gateways answer.
      log('SCIM secret token: minted, used on both gateways, rotated with overlap, revoked');
      // Refused on the first request after the 204 at both; a gateway that fails it is watched past its token cache.
      const run = await exerciseSecretTokens(
        { a: stack.gateways.a.url, b: stack.gateways.b.url },
        stack.organizationAdmin.token,
        SCIM_TOKEN_CACHE_SECONDS * 1000 + 5_000,
      );
      const problems = secretTokenProblems(run);
      const times = Object.values(run.refusedAfterMs).map((ms) => ms ?? Infinity);
      rows.push({
        fault: 'SCIM secret token rotated with overlap, then revoked (organization admin, gateways A and B)',
        expectation:
          "both refuse the revoked token on the first request after the DELETE's 204, the new one keeps working",
        required: true,
        requests: 0,
        failed: problems.length,
        p99Ms: 0,
        maxMs: Math.max(...times),
        verdict: problems.length ? 'FAIL' : 'pass',
        notes: problems,
      });
      log(`  revoked token refused after ${JSON.stringify(run.refusedAfterMs)} ms: ${problems.join('; ') || 'pass'}`);
    }

    if (wanted('noisy')) {
      // Two organizations of their own, the main load paused (it keeps the machine busy: its neighbour's p99 would say
      // little); the quiet one alone, then beside the noisy one's flood.
      await settle(samples);
      log('noisy neighbour: seeding a quiet and a noisy organization');
      const targets = await seedNoisyNeighbours(stack.adminUrl, stack.issuer, noisyAccounts, NOISY.seed, SCOPES);
      await load.stop();
      log(
        `fault: noisy neighbour (${T.noisyQuiet} s quiet alone, ${T.noisyFlood} s beside the flood, ` +
          `${T.noisyQuiet} s alone again)`,
      );
      const run = await runNoisyNeighbour({
        targets,
        gateways: gatewayUrls,
        quietSeconds: T.noisyQuiet,
        floodSeconds: T.noisyFlood,
        quietAfterSeconds: T.noisyQuiet,
        quietRate: NOISY.quietRate,
        noisyConcurrency: NOISY.noisyConcurrency,
        noisyMaxRequests: NOISY.noisyMaxRequests,
        retryPauseCapMs: NOISY.retryPauseCapMs,
        timeoutMs: 10_000,
      });
      // The row's organizations count as active on a gateway for ACTIVE_WINDOW_MS after their last request, and while
      // they do the main load — one organization's closed loop, far above any share — would be held to its share.
      await sleep(ACTIVE_WINDOW_MS);
      load = new Load(endpoints, mixOf(stack));
      load.start(Number(values.concurrency));
      samples = load.samples;
      const verdict = judgeNoisyNeighbour(run);
      rows.push(...noisyNeighbourRows(verdict));
      for (const line of formatVerdict(verdict).split('\n')) log(`  ${line}`);
      if (verdict.quietProblems.length || verdict.noisyProblems.length) {
        // The answers nobody should get (a 429 or 400 of the noisy organization may be as promised).
        const failed = run.samples.filter((s) => !is2xx(s) && s.status !== 429 && s.status !== 400);
        const notable = everyReplica(stack).flatMap((replica) =>
          replica
            .notable(run.quietPhase.from - 1_000, run.floodPhase.to + 1_000)
            .map((line) => ({ replica: replica.name, line })),
        );
        for (const line of failureEvidence(failed, notable, run.floodPhase.from)) log(`  ${line}`);
      }
    }

    if (wanted('rogue')) {
      let run: RogueRun | undefined;
      await phase(
        'a rogue pod on the hop (plaintext, a foreign CA, platform certificates on methods they may not call)',
        allSucceed('the load unaffected: every request 2xx'),
        async () => {
          run = await playRoguePod(stack);
        },
        () => [
          {
            fault: 'the rogue calls themselves',
            expectation: 'each refused (no handshake, or PERMISSION_DENIED); nothing written',
            required: true,
            requests: run!.attempts.length,
            failed: run!.problems.length,
            p99Ms: 0,
            maxMs: 0,
            verdict: run!.problems.length ? 'FAIL' : 'pass',
            notes: run!.problems,
          },
        ],
      );
      const by = (code: number) => run!.attempts.filter((a) => a.got === code).length;
      log(`  rogue calls: ${by(14)} without a handshake, ${by(7)} PERMISSION_DENIED, ${run!.problems.length} problems`);
    }

    if (wanted('rolling')) {
      await phase(
        'rolling restart (SIGTERM, one replica of each service and one gateway at a time)',
        rollingRestart(uncleanDrains),
        async () => {
          for (const id of ['a', 'b'] as const) {
            await Promise.all([
              ...SERVICES.map((s) => restartService(stack, s, id)),
              restartGateway(stack, endpoints, id),
            ]);
            log(`  replicas ${id.toUpperCase()} restarted and taking traffic`);
          }
          await sleep(T.afterRoll * 1000);
        },
      );
    }

    if (wanted('rotation')) {
      // Not a fault: CURSOR_SECRET and the attestation key rotated under the same load, in the documented order, while
      // a client pages through drives across both gateways; then the cursors issued before are used on both.
      const issuedBefore = await firstPageCursors(stack);
      const stale: string[] = [];
      const walker = stack.callers[0]!;
      const walk = { route: 'drives pages by next_cursor', path: drivesPage(walker.userId), token: walker.token };
      await phase(
        'CURSOR_SECRET and attestation key rotated (3 rolling restarts of the gateways and SCIM replicas)',
        keyRotation(stale),
        async () => {
          const stopWalk = load!.walk('cursor-walk', walk);
          await rotateKeys(stack, endpoints);
          await sleep(T.afterRoll * 1000);
          await stopWalk();
          stale.push(...(await staleCursors(stack, issuedBefore)));
        },
        (from, to) => [
          judge(
            'a client paging by next_cursor on both gateways across the rotation',
            allSucceed('every page 2xx'),
            window(samples, from, to, 'cursor-walk'),
            from,
          ),
        ],
      );
    }

    if (wanted('drops')) {
      const admin = new pg.Client({ connectionString: stack.adminUrl, application_name: 'chaos' });
      await admin.connect();
      let dropped = 0;
      await phase(
        'pool connections terminated (pg_terminate_backend, every service backend)',
        allSucceed('0 failed reads'),
        async () => {
          const end = Date.now() + T.drops * 1000;
          while (Date.now() < end) {
            await sleep(T.dropEvery * 1000);
            const { rowCount } = await admin.query(
              `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
              WHERE application_name LIKE 'mileage-%' AND pid <> pg_backend_pid()`,
            );
            dropped += rowCount ?? 0;
          }
        },
      );
      await admin.end();
      log(`  ${dropped} backends terminated`);
    }

    if (wanted('postgres')) {
      const pidsBefore = allPids(stack);
      const marks = { downAt: 0, upAt: 0 };
      await phase(
        'PostgreSQL restart (stopped, then started)',
        postgresRestart(marks, RECOVERY_MS, () => allPids(stack) !== pidsBefore),
        async () => {
          const started = Date.now();
          await sleep(1000);
          marks.downAt = Date.now();
          await stack.postgres.stop();
          await sleep(T.pgDown * 1000);
          await stack.postgres.start();
          marks.upAt = Date.now();
          log(
            `  PostgreSQL was down for ${marks.upAt - marks.downAt} ms (+${((marks.downAt - started) / 1000).toFixed(1)} s into the window)`,
          );
          await recovery(samples, marks.upAt + RECOVERY_MS + T.after * 1000);
        },
      );
    }

    if (wanted('freeze')) {
      const marks = { frozenAt: 0, thawedAt: 0 };
      const frozen = stack.services.drives.b;
      await phase(
        'one replica frozen (SIGSTOP drives B, then SIGCONT)',
        replicaFrozen(marks, GATEWAY_TIMING),
        async () => {
          const started = Date.now();
          await sleep(500);
          marks.frozenAt = Date.now();
          frozen.signal('SIGSTOP');
          await sleep(T.freeze * 1000);
          frozen.signal('SIGCONT');
          marks.thawedAt = Date.now();
          const at = (t: number) => `+${((t - started) / 1000).toFixed(1)} s`;
          log(`  frozen from ${at(marks.frozenAt)} to ${at(marks.thawedAt)}`);
          await recovery(samples, marks.thawedAt + T.after * 1000);
        },
      );
    }

    if (wanted('freeze')) {
      // The whole Drives service frozen: its calls hang to the gateway's deadline until each gateway's circuit
      // breaker opens, then they are answered at once; the other services' routes are not touched.
      const marks = { frozenAt: 0, thawedAt: 0 };
      const replicas = [stack.services.drives.a, stack.services.drives.b];
      await phase(
        'Drives service frozen (SIGSTOP both replicas, then SIGCONT)',
        serviceFrozen(marks, GATEWAY_TIMING),
        async () => {
          await sleep(500);
          marks.frozenAt = Date.now();
          for (const r of replicas) r.signal('SIGSTOP');
          await sleep(T.freeze * 1000);
          for (const r of replicas) r.signal('SIGCONT');
          marks.thawedAt = Date.now();
          await recovery(samples, marks.thawedAt + GATEWAY_TIMING.openMs + T.after * 1000);
        },
      );
    }

    if (wanted('redis')) {
      await phase(
        'Redis stopped (the shared rate limiter)',
        allSucceed('each gateway limits in its own memory, nothing fails (docs/operations.md)'),
        async () => {
          await sleep(500);
          await stack.redis.stop();
          await sleep(T.redisDown * 1000);
          await stack.redis.start();
          await sleep(T.after * 1000);
        },
      );
    }

    if (wanted('jwks')) {
      // A key rotation the gateways have not seen yet, then the provider goes away: tokens signed with the new key
      // cannot be judged.
      log('rotating the signing key of the identity provider');
      await stack.rotateSigningKey();
      const newKeyToken = await stack.token(stack.callers[0]!.userId);
      let newKeyRecovered: number | undefined;
      await phase(
        'JWKS down (identity provider stopped)',
        allSucceed('tokens of known keys served'),
        async () => {
          await stack.idp.stop();
          const stopProbe = load!.probe('new-key', {
            route: 'users/me (new key)',
            path: '/v1/users/me',
            token: newKeyToken,
          });
          await sleep(T.jwksDown * 1000);
          await stopProbe();
          stack.idp.start();
          await stack.idp.waitUntilReady();
          // Back: the unknown key is fetched on its next use (at most one fetch per cooldown).
          const back = Date.now();
          const deadline = back + 30_000;
          while (Date.now() < deadline) {
            const res = await fetch(`${stack.gateways.a.url}/v1/users/me`, {
              headers: { authorization: `Bearer ${newKeyToken}` },
            });
            await res.arrayBuffer();
            if (res.ok) {
              newKeyRecovered = Date.now() - back;
              break;
            }
            await sleep(200);
          }
        },
        (from, to) => [
          judge(
            'JWKS down: a token signed with a key no gateway has seen',
            unknownKeyWhileJwksDown(() => newKeyRecovered),
            window(samples, from, to, 'new-key'),
            from,
          ),
        ],
      );
      if (newKeyRecovered !== undefined)
        log(`  the new key was accepted ${newKeyRecovered} ms after the provider was back`);
    }
  } finally {
    await load?.stop();
    await stack.stop();
  }
  process.stdout.write(`\n${formatTable(rows)}\n`);
  process.exit(exitCode(rows));
}

/** The mix: the caller's account, their drives page, a team's reported drives, an identity provider's SCIM lookup. */
function mixOf(stack: ChaosStack): (i: number) => Request {
  const admins = stack.callers.filter((c) => c.groupId !== undefined);
  return (i) => {
    const caller = stack.callers[i % stack.callers.length]!;
    switch (i % 4) {
      case 0:
        return { route: '/v1/users/me', path: '/v1/users/me', token: caller.token };
      case 1:
        return {
          route: '/v1/users/{id}/drives',
          path: `/v1/users/${caller.userId}/drives?limit=20`,
          token: caller.token,
        };
      case 2: {
        const admin = admins[i % admins.length]!;
        return {
          route: '/v1/groups/{id}/reported-drives',
          path: `/v1/groups/${admin.groupId}/reported-drives?limit=20`,
          token: admin.token,
        };
      }
      default:
        return {
          route: 'SCIM /Users?filter',
          path: `/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${caller.userName}"`)}`,
          token: stack.scimToken,
        };
    }
  };
}

/** A page of a user's drives small enough that a walk through them takes several pages. */
const drivesPage = (userId: string) => `/v1/users/${userId}/drives?limit=5`;

/** The next_cursor of the first drives page of a few callers, from each gateway. */
async function firstPageCursors(stack: ChaosStack): Promise<{ path: string; token: string; cursor: string }[]> {
  const cursors = [];
  for (const caller of stack.callers.slice(0, 4))
    for (const { url } of Object.values(stack.gateways)) {
      const res = await fetch(`${url}${drivesPage(caller.userId)}`, {
        headers: { authorization: `Bearer ${caller.token}` },
      });
      const page = (await res.json()) as { next_cursor?: string | null };
      if (!res.ok || !page.next_cursor) throw new Error(`no first page with a next_cursor: ${res.status}`);
      cursors.push({ path: drivesPage(caller.userId), token: caller.token, cursor: page.next_cursor });
    }
  return cursors;
}

/** The cursors of `issued` that a gateway no longer continues (each tried on both). */
async function staleCursors(
  stack: ChaosStack,
  issued: { path: string; token: string; cursor: string }[],
): Promise<string[]> {
  const stale = [];
  for (const { path, token, cursor } of issued)
    for (const [id, { url }] of Object.entries(stack.gateways)) {
      const res = await fetch(`${url}${path}&cursor=${encodeURIComponent(cursor)}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      await res.arrayBuffer();
      if (res.status !== 200)
        stale.push(`a cursor issued before the rotation got ${res.status} on gateway ${id.toUpperCase()}`);
    }
  return stale;
}

/**
 * The keys' rotation (rotation.ts), each step a rolling restart as the chart does it: the SCIM replica and the gateway
 * A whose setting changes at once, then B.
 */
async function rotateKeys(stack: ChaosStack, endpoints: Endpoints): Promise<void> {
  const current = stack.gateways.a.replica;
  const before = {
    cursor: current.setting('CURSOR_SECRET')!,
    attestation: current.setting('ACTOR_ATTESTATION_SECRET')!,
  };
  const after = { cursor: randomBytes(32).toString('base64url'), attestation: randomBytes(32).toString('base64url') };
  for (const [i, step] of rotationSteps(before, after).entries()) {
    for (const id of ['a', 'b'] as const) {
      const restarts: Promise<void>[] = [];
      if (Object.keys(step.scim).length) {
        stack.services.scim[id].reconfigure(step.scim);
        restarts.push(restartService(stack, 'scim', id));
      }
      if (Object.keys(step.gateway).length) {
        stack.gateways[id].replica.reconfigure(step.gateway);
        restarts.push(restartGateway(stack, endpoints, id));
      }
      await Promise.all(restarts);
    }
    log(`  step ${i + 1} rolled out: ${step.what}`);
  }
}

/** Replicas whose drain did not end cleanly (exit status other than 0: a shutdown step failed or timed out). */
const uncleanDrains: string[] = [];

/** SIGTERM and the drain, logged; an unclean exit is remembered for the rolling restart's verdict. */
async function drain(replica: Replica): Promise<void> {
  const { code, drainMs } = await replica.stop();
  log(`  ${replica.name} exited (${code}) ${drainMs} ms after SIGTERM${code === 0 ? '' : `: ${replica.lastWords()}`}`);
  if (code !== 0) uncleanDrains.push(`${replica.name} exited ${code} after ${drainMs} ms`);
}

/** A pod of a service deleted as Kubernetes does it: the preStop pause, SIGTERM (the drain), a new one until ready. */
async function restartService(stack: ChaosStack, service: (typeof SERVICES)[number], id: ReplicaId): Promise<void> {
  const replica = stack.services[service][id];
  await sleep(PRE_STOP_MS);
  await drain(replica);
  replica.start();
  // Ready and serving calls: one caller has found it. The others retry its address after their reconnect backoff, so
  // the next replica goes only after the longest backoff, else a caller may find neither (its calls fail at once).
  await replica.waitUntilReady(60_000, true);
  await sleep(RECONNECT_BOUND_MS);
}

/** A gateway pod deleted: it leaves the Service's endpoints, the preStop pause, SIGTERM, a new one until ready. */
async function restartGateway(stack: ChaosStack, endpoints: Endpoints, id: ReplicaId): Promise<void> {
  const { replica, url } = stack.gateways[id];
  endpoints.setTerminating(url, true);
  await sleep(PRE_STOP_MS);
  await drain(replica);
  replica.start();
  await replica.waitUntilReady(60_000);
  endpoints.setTerminating(url, false);
}

/** The gateways and every service replica. */
function everyReplica(stack: ChaosStack): Replica[] {
  return [
    stack.gateways.a.replica,
    stack.gateways.b.replica,
    ...SERVICES.flatMap((s) => [stack.services[s].a, stack.services[s].b]),
  ];
}

function allPids(stack: ChaosStack): string {
  return everyReplica(stack)
    .map((replica) => replica.pid)
    .join(',');
}

/** Waits until the load has answered 2xx for a whole second (at most until `deadline`), then at least until it. */
async function recovery(samples: Sample[], deadline: number): Promise<void> {
  await settle(samples, Math.max(0, deadline - Date.now()) + 15_000);
  const left = deadline - Date.now();
  if (left > 0) await sleep(left);
}

/** Between faults: waits (bounded) until every request of the last second was answered 2xx. */
async function settle(samples: Sample[], timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const now = Date.now();
    const last = samples.filter((s) => s.stream === 'main' && s.endedAt > now - 1000);
    if (last.length > 0 && last.every(is2xx)) return;
    await sleep(100);
  }
  log(`  not settled within ${timeoutMs} ms; going on`);
}

main().catch((err: unknown) => {
  log(`chaos run failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(2);
});
