// The noisy neighbour (CONTRACT §7, "Fair share"): one organization floods costly SCIM lists and pages of 1,000 drives
// at and above its limits while another runs its ordinary mixed load. First the quiet organization alone, then both at
// once, then the quiet one alone again, on the same machine: its latency without the flood is taken on both sides of
// it. Judged whatever the mechanism: the quiet organization is answered 2xx throughout with its p99 within 3× its own
// p99 without the flood; the noisy one gets
// 429 + Retry-After (and 400 for a filter over the SCIM cost budget), never a 5xx, and is still served some of its
// requests. Used by `npm run chaos` (its row) and `npm run bench:noisy` (the same against a stack of one's choice).
import { passwordToken } from '@mileage/devstack';
import { ORGANIZATION_SETTING } from '@mileage/runtime/database';
import { newScimSecretToken } from '@mileage/runtime/formats';
import { createHash, randomBytes } from 'node:crypto';
import { constants, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import pg from 'pg';
import { quantile, type Row, type Sample } from './report';

export type Organization = 'quiet' | 'noisy';

export interface NoisySample extends Sample {
  organization: Organization;
  /** A SCIM filter over the cost budget: answered 400 (invalidFilter) or 429, never served. */
  overBudget: boolean;
}

/** Who sends what: a user of each organization, its provisioning credential, the noisy organization's team. */
export interface NoisyTargets {
  /** Its users take turns, so that each stays within its per-caller limits (CONTRACT §2: 30 and 20 a minute). */
  quiet: { users: { userId: string; token: string }[]; scimToken: string; userName: string };
  noisy: { scimToken: string; groupAdminToken: string; groupId: number; driver: { userId: string; token: string } };
}

interface Request {
  route: string;
  path: string;
  token: string;
  overBudget: boolean;
}

/** An or of `terms` substring searches of every address: each one a scan of the organization's users' emails. */
export function emailSearch(terms: number): string {
  return Array.from({ length: terms }, (_, i) => `emails.value co "x${i}q"`).join(' or ');
}

/** As the issue measured it: 63 terms, far over the SCIM filter budget. */
export const OVER_BUDGET_TERMS = 63;
/** Eight unindexed terms on a multi-valued attribute: the most the SCIM service's budget admits (filter-cost.ts). */
export const AT_BUDGET_TERMS = 8;

const scimList = (filter: string | undefined, count: number) =>
  `/scim/v2/Users?count=${count}${filter ? `&filter=${encodeURIComponent(filter)}` : ''}`;

/** The noisy organization's requests, in turn: the costliest SCIM lists and pages a client may ask for. */
export function noisyMix(t: NoisyTargets['noisy']): Request[] {
  return [
    {
      route: `SCIM /Users ${OVER_BUDGET_TERMS} × co, count 1000`,
      path: scimList(emailSearch(OVER_BUDGET_TERMS), 1000),
      token: t.scimToken,
      overBudget: true,
    },
    {
      route: `SCIM /Users ${AT_BUDGET_TERMS} × co, count 1000`,
      path: scimList(emailSearch(AT_BUDGET_TERMS), 1000),
      token: t.scimToken,
      overBudget: false,
    },
    { route: 'SCIM /Users count 1000', path: scimList(undefined, 1000), token: t.scimToken, overBudget: false },
    {
      route: '/v1/groups/{id}/reported-drives limit 1000',
      path: `/v1/groups/${t.groupId}/reported-drives?limit=1000`,
      token: t.groupAdminToken,
      overBudget: false,
    },
    {
      route: '/v1/users/{id}/drives limit 1000',
      path: `/v1/users/${t.driver.userId}/drives?limit=1000`,
      token: t.driver.token,
      overBudget: false,
    },
  ];
}

/**
 * The quiet organization's ordinary requests, in turn: per user its account twice, a page of its drives once, and
 * three provisioning lookups (an identity provider's, which has the larger limit).
 */
export function quietMix(t: NoisyTargets['quiet']): Request[] {
  const lookup: Request = {
    route: 'SCIM /Users?filter userName eq',
    path: `/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${t.userName}"`)}`,
    token: t.scimToken,
    overBudget: false,
  };
  return t.users.flatMap(({ userId, token }) => {
    const me: Request = { route: '/v1/users/me', path: '/v1/users/me', token, overBudget: false };
    const drives: Request = {
      route: '/v1/users/{id}/drives limit 20',
      path: `/v1/users/${userId}/drives?limit=20`,
      token,
      overBudget: false,
    };
    return [me, lookup, drives, lookup, me, lookup];
  });
}

export interface ScenarioOptions {
  targets: NoisyTargets;
  /** The gateways, each request to the next in turn (loopback only). */
  gateways: string[];
  /**
   * Seconds of the quiet organization alone, then of the flood beside it, then of the quiet one alone again (from the
   * flood's last answer): its p99 without the flood is of the answers on both sides, twice as many as one side gives.
   */
  quietSeconds: number;
  floodSeconds: number;
  quietAfterSeconds: number;
  /** The quiet organization's requests a second, sent on schedule whatever the answers take (an open loop). */
  quietRate: number;
  /** The noisy organization's requests in flight: each worker sends its next as soon as one is answered. */
  noisyConcurrency: number;
  /** A bound on the noisy organization's requests whatever the time. */
  noisyMaxRequests: number;
  /**
   * After a 429 a noisy worker waits its Retry-After, but at most this long: a client more eager than it is asked to
   * be, which keeps the organization at and above its limits.
   */
  retryPauseCapMs: number;
  timeoutMs: number;
}

export interface NoisyRun {
  samples: NoisySample[];
  quietPhase: { from: number; to: number };
  floodPhase: { from: number; to: number };
  /** The quiet organization alone again: from the flood's last answer (or the flood phase's end, if later). */
  afterPhase: { from: number; to: number };
}

/** The flood and the load go to loopback only: the scenario is a fault drill, not a load test of anyone else's. */
export function assertLoopback(url: string): void {
  const host = new URL(url).hostname;
  if (!(host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host)))
    throw new Error(`the noisy-neighbour scenario sends to loopback only, not to ${host}`);
}

/** Epoch milliseconds with a fraction (each thread's own origin, so the threads' times compare). */
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/**
 * Runs both phases and returns every answer of both organizations. The flood runs in a worker thread: reading its
 * pages of 1,000 drives would otherwise delay this thread's timers and add its own wait to the quiet latencies.
 */
export async function runNoisyNeighbour(options: ScenarioOptions): Promise<NoisyRun> {
  for (const url of options.gateways) assertLoopback(url);
  // Started and loaded before the quiet phase: its start would otherwise be part of either phase.
  const flooder = await startFlooder();
  const quiet = quietMix(options.targets.quiet);
  // Each of the quiet requests once on each gateway first, not judged: a token's first use (its verification, a secret
  // token's lookup) is no part of the organization's usual latency.
  for (const base of options.gateways)
    for (const request of quiet) await timedFetch(`${base}${request.path}`, request.token, options.timeoutMs);
  const start = now();
  const floodFrom = start + options.quietSeconds * 1000;
  const end = floodFrom + options.floodSeconds * 1000;
  const afterEnd = end + options.quietAfterSeconds * 1000;
  const samples: NoisySample[] = [];
  let floodAnswered = end;
  const interval = 1000 / options.quietRate;
  const quietSent: Promise<void>[] = [];
  const flooding = flooder
    .flood({
      gateways: options.gateways,
      noisy: options.targets.noisy,
      from: floodFrom,
      until: end,
      concurrency: options.noisyConcurrency,
      maxRequests: options.noisyMaxRequests,
      retryPauseCapMs: options.retryPauseCapMs,
      timeoutMs: options.timeoutMs,
    })
    .then((noisy) => {
      samples.push(...noisy);
      floodAnswered = Math.max(end, now());
    });
  for (let i = 0; start + i * interval < afterEnd; i++) {
    await sleep(start + i * interval - now());
    const request = quiet[i % quiet.length]!;
    const base = options.gateways[i % options.gateways.length]!;
    quietSent.push(
      timedFetch(`${base}${request.path}`, request.token, options.timeoutMs).then(
        (answer) => void samples.push(sampleOf('quiet', request, answer)),
      ),
    );
  }
  await Promise.all([...quietSent, flooding]);
  return {
    samples,
    quietPhase: { from: start, to: floodFrom },
    floodPhase: { from: floodFrom, to: end },
    afterPhase: { from: floodAnswered, to: afterEnd },
  };
}

interface FloodOrders {
  gateways: string[];
  noisy: NoisyTargets['noisy'];
  /** Epoch ms: the first requests start then, and none after `until`. */
  from: number;
  until: number;
  concurrency: number;
  maxRequests: number;
  retryPauseCapMs: number;
  timeoutMs: number;
}

const sampleOf = (
  organization: Organization,
  request: Request,
  answer: Awaited<ReturnType<typeof timedFetch>>,
): NoisySample => {
  const { retryAfterSeconds: _, ...sample } = answer;
  return { organization, overBudget: request.overBudget, stream: organization, route: request.route, ...sample };
};

/** The noisy organization's workers until the flood's end or its bound, whichever comes first. */
async function flood(orders: FloodOrders): Promise<NoisySample[]> {
  const noisy = noisyMix(orders.noisy);
  const samples: NoisySample[] = [];
  let sent = 0;
  await sleep(orders.from - now());
  await Promise.all(
    Array.from({ length: orders.concurrency }, async (_, w) => {
      for (let i = w; now() < orders.until && sent < orders.maxRequests; i++) {
        sent++;
        const request = noisy[i % noisy.length]!;
        const base = orders.gateways[sent % orders.gateways.length]!;
        const answer = await timedFetch(`${base}${request.path}`, request.token, orders.timeoutMs);
        samples.push(sampleOf('noisy', request, answer));
        if (answer.status === 429) {
          const asked = (answer.retryAfterSeconds ?? 1) * 1000;
          await sleep(Math.min(asked, orders.retryPauseCapMs, orders.until - now()));
        }
      }
    }),
  );
  return samples;
}

/** A worker thread that has loaded this module and waits for its orders; then floods and answers its samples. */
async function startFlooder(): Promise<{ flood(orders: FloodOrders): Promise<NoisySample[]> }> {
  const worker = new Worker(__filename, { workerData: { noisyFlooder: true } });
  const exited = new Promise<never>((_, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the flood's worker exited (${code}) before it answered`)));
  });
  const message = <T>() => Promise.race([new Promise<T>((resolve) => worker.once('message', resolve)), exited]);
  await message<'ready'>();
  return {
    flood: async (orders) => {
      worker.postMessage(orders);
      const samples = await message<NoisySample[]>();
      await worker.terminate();
      return samples;
    },
  };
}

if (!isMainThread && (workerData as { noisyFlooder?: boolean } | null)?.noisyFlooder) {
  // The flood's client is another company's machine in production; here its own fetching and draining of megabytes
  // would take the two cores from the servers beside the quiet client, and what the row judges is how the servers share
  // them. So this thread runs at the lowest CPU priority (Linux: setpriority of pid 0 is the calling thread); the
  // servers' work for the flood keeps theirs.
  setPriority(0, constants.priority.PRIORITY_LOW);
  parentPort!.once('message', (orders: FloodOrders) => void flood(orders).then((s) => parentPort!.postMessage(s)));
  parentPort!.postMessage('ready');
}

async function timedFetch(url: string, token: string, timeoutMs: number) {
  const startedAt = now();
  try {
    const res = await fetch(url, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    const retryAfter = res.headers.get('retry-after');
    // Only a failure's body is read as text (its detail); a page of 1,000 drives is read and dropped.
    const failure = res.ok
      ? (await res.arrayBuffer(), undefined)
      : { requestId: res.headers.get('x-request-id') ?? '', detail: errorDetail(await res.text()) };
    return {
      startedAt,
      endedAt: now(),
      status: res.status,
      retryAfter: retryAfter !== null,
      retryAfterSeconds: retryAfter !== null && /^\d+$/.test(retryAfter) ? Number(retryAfter) : undefined,
      ...(failure && { failure }),
    };
  } catch (err) {
    return {
      startedAt,
      endedAt: now(),
      status: 0,
      retryAfter: false,
      retryAfterSeconds: undefined,
      failure: { requestId: '', detail: err instanceof Error ? err.message : String(err) },
    };
  }
}

/** A problem's or a SCIM error's scimType and detail, at most 200 characters. */
function errorDetail(text: string): string {
  try {
    const body = JSON.parse(text) as { detail?: unknown; scimType?: unknown };
    const detail = typeof body.detail === 'string' ? body.detail : '';
    return (typeof body.scimType === 'string' ? `${body.scimType}: ${detail}` : detail || text).slice(0, 200);
  } catch {
    return text.slice(0, 200);
  }
}

// ---- The verdict: pure, over the samples.

export interface Figures {
  count: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** "count × status", the most frequent first; 429s with and without Retry-After apart. */
  statuses: string[];
}

export interface NoisyVerdict {
  quietAlone: Figures;
  quietBeside: Figures;
  noisy: Figures;
  /** The quiet organization's p99 beside the flood over its p99 alone. */
  p99Ratio: number;
  /** Why the quiet organization was hurt; empty when it was not. */
  quietProblems: string[];
  /** What the noisy organization got that it should not have; empty when all was as promised. */
  noisyProblems: string[];
}

export interface NoisyRules {
  /** The quiet organization's p99 beside the flood may be at most this many times its p99 alone. */
  maxP99Ratio: number;
  /**
   * Fewer quiet answers beside the flood, or alone (before and after it together, half of them on each side), than
   * this and a p99 is only a maximum: the run itself failed.
   */
  minQuietSamples: number;
}

export const NOISY_RULES: NoisyRules = { maxP99Ratio: 3, minQuietSamples: 100 };

const is2xx = (s: Sample) => s.status >= 200 && s.status < 300;
const statusKey = (s: Sample) =>
  s.status === 0 ? 'no answer' : s.status === 429 && !s.retryAfter ? '429 without Retry-After' : String(s.status);

export function figuresOf(samples: Sample[]): Figures {
  const durations = samples.map((s) => s.endedAt - s.startedAt);
  const counts = new Map<string, number>();
  for (const s of samples) counts.set(statusKey(s), (counts.get(statusKey(s)) ?? 0) + 1);
  return {
    count: samples.length,
    p50Ms: round(quantile(durations, 0.5)),
    p99Ms: round(quantile(durations, 0.99)),
    maxMs: round(durations.length ? Math.max(...durations) : 0),
    statuses: [...counts].sort((a, b) => b[1] - a[1]).map(([key, n]) => `${n} × ${key}`),
  };
}

const round = (ms: number) => Math.round(ms * 10) / 10;

/**
 * What the noisy organization may get: served (2xx) unless its filter is over the budget; 429 with Retry-After over
 * its share; 400 for a SCIM filter the budget refuses. Never a 5xx, no answer, or a 429 that does not say when.
 */
export function noisyAnswerAccepted(s: NoisySample): boolean {
  if (is2xx(s)) return !s.overBudget;
  if (s.status === 429) return s.retryAfter;
  return s.status === 400 && s.route.startsWith('SCIM');
}

/**
 * Judges one run, each organization on its own terms: the quiet answers received before the flood began and those sent
 * after its last answer ("alone": one in flight at either edge is in no phase), those sent during it; the noisy
 * answers sent during it.
 */
export function judgeNoisyNeighbour(run: NoisyRun, rules: NoisyRules = NOISY_RULES): NoisyVerdict {
  const inPhase = (org: Organization, phase: { from: number; to: number }) =>
    run.samples.filter((s) => s.organization === org && s.startedAt >= phase.from && s.startedAt < phase.to);
  const before = inPhase('quiet', run.quietPhase).filter((s) => s.endedAt <= run.floodPhase.from);
  const after = inPhase('quiet', run.afterPhase);
  const alone = [...before, ...after];
  const beside = inPhase('quiet', run.floodPhase);
  const noisy = inPhase('noisy', run.floodPhase);
  const quietAlone = figuresOf(alone);
  const quietBeside = figuresOf(beside);
  const p99Ratio = quietAlone.p99Ms > 0 ? round(quietBeside.p99Ms / quietAlone.p99Ms) : Infinity;

  const quietProblems: string[] = [];
  for (const [phase, samples, needed] of [
    ['before the flood', before, rules.minQuietSamples / 2],
    ['beside the flood', beside, rules.minQuietSamples],
    ['after the flood', after, rules.minQuietSamples / 2],
  ] as const) {
    if (samples.length < needed)
      quietProblems.push(`only ${samples.length} quiet answers ${phase} (at least ${needed} needed)`);
    const failed = samples.filter((s) => !is2xx(s));
    if (failed.length) quietProblems.push(`${phase}: ${figuresOf(failed).statuses.join(', ')} (every answer 2xx)`);
  }
  if (p99Ratio > rules.maxP99Ratio)
    quietProblems.push(
      `p99 ${quietBeside.p99Ms} ms beside the flood is ${p99Ratio}× its ${quietAlone.p99Ms} ms alone (at most ${rules.maxP99Ratio}×)`,
    );

  const noisyProblems: string[] = [];
  if (noisy.length === 0) noisyProblems.push('the noisy organization sent nothing');
  const refused = noisy.filter((s) => !noisyAnswerAccepted(s));
  if (refused.length) {
    const byRoute = new Map<string, number>();
    for (const s of refused) {
      const key = `${statusKey(s)} on ${s.route}`;
      byRoute.set(key, (byRoute.get(key) ?? 0) + 1);
    }
    noisyProblems.push(
      `not as promised: ${[...byRoute]
        .sort((a, b) => b[1] - a[1])
        .map(([key, n]) => `${n} × ${key}`)
        .join(', ')}`,
    );
  }
  if (noisy.length && !noisy.some((s) => s.status === 429))
    noisyProblems.push('never 429: the flood met no limit of its share');
  if (noisy.length && !noisy.some(is2xx)) noisyProblems.push('nothing served: locked out rather than given its share');
  return { quietAlone, quietBeside, noisy: figuresOf(noisy), p99Ratio, quietProblems, noisyProblems };
}

/** The verdict as the chaos table's two required rows. */
export function noisyNeighbourRows(verdict: NoisyVerdict, rules: NoisyRules = NOISY_RULES): Row[] {
  const { quietAlone, quietBeside, noisy } = verdict;
  return [
    {
      fault: 'noisy neighbour: another organization floods costly SCIM lists and 1,000-drive pages (the quiet one)',
      expectation: `every answer 2xx, p99 within ${rules.maxP99Ratio}× its p99 without the flood`,
      required: true,
      requests: quietBeside.count,
      failed: verdict.quietProblems.length,
      p99Ms: Math.round(quietBeside.p99Ms),
      maxMs: Math.round(quietBeside.maxMs),
      verdict: verdict.quietProblems.length ? 'FAIL' : 'pass',
      notes: [
        `alone: ${describe(quietAlone)}; beside the flood: ${describe(quietBeside)}; p99 ratio ${verdict.p99Ratio}`,
        ...verdict.quietProblems,
      ],
    },
    {
      fault: 'noisy neighbour: the flooding organization (at and above its share)',
      expectation: '429 + Retry-After over its share, 400 for a filter over the budget, some served; never a 5xx',
      required: true,
      requests: noisy.count,
      failed: verdict.noisyProblems.length,
      p99Ms: Math.round(noisy.p99Ms),
      maxMs: Math.round(noisy.maxMs),
      verdict: verdict.noisyProblems.length ? 'FAIL' : 'pass',
      notes: [describe(noisy), ...verdict.noisyProblems],
    },
  ];
}

export function describe(f: Figures): string {
  return `${f.count} requests, p50 ${f.p50Ms} ms, p99 ${f.p99Ms} ms, max ${f.maxMs} ms (${f.statuses.join(', ') || 'none'})`;
}

/** The figures and the verdict as the bench prints them. */
export function formatVerdict(verdict: NoisyVerdict, rules: NoisyRules = NOISY_RULES): string {
  const pass = !verdict.quietProblems.length && !verdict.noisyProblems.length;
  return [
    `quiet organization alone:        ${describe(verdict.quietAlone)}`,
    `quiet organization, flood beside: ${describe(verdict.quietBeside)}`,
    `  p99 ratio ${verdict.p99Ratio} (${Number.isFinite(rules.maxP99Ratio) ? `at most ${rules.maxP99Ratio}` : 'not judged'})`,
    `noisy organization:              ${describe(verdict.noisy)}`,
    ...[...verdict.quietProblems, ...verdict.noisyProblems].map((p) => `  problem: ${p}`),
    `verdict: ${pass ? 'pass' : 'FAIL'}`,
  ].join('\n');
}

// ---- The two organizations, seeded straight into a stack's database (the chaos stack, the bench's own).

export interface SeededAccount {
  username: string;
  password: string;
  userId: string;
}

/** The sign-in accounts the seeded organizations' users need at the identity provider (before it starts). */
export function noisyNeighbourAccounts(password = randomBytes(12).toString('base64url')): SeededAccount[] {
  return [
    { username: 'quiet2@quiet.example', password, userId: 'Q000000002' },
    { username: 'quiet3@quiet.example', password, userId: 'Q000000003' },
    { username: 'noisy1@noisy.example', password, userId: 'N000000001' },
    { username: 'noisy2@noisy.example', password, userId: 'N000000002' },
  ];
}

export interface SeedSizes {
  /** Users of the noisy organization (the issue measured Globex with 2,400). */
  noisyUsers: number;
  /** Its drives, spread over twenty of its team's drivers: enough that a team's page of 1,000 is full. */
  noisyDrives: number;
}

/**
 * Two organizations besides the stack's own: "Quiet Co" (four users, a team, 200 drives) and "Noisy Corp"
 * (`noisyUsers` users, a team of the first hundred, `noisyDrives` drives, half of its business ones reported to the team),
 * each with a SCIM secret token; then the users' tokens of `accounts`. As the superuser: no policy applies.
 */
export async function seedNoisyNeighbours(
  adminUrl: string,
  issuer: string,
  accounts: SeededAccount[],
  sizes: SeedSizes,
  scope: string,
): Promise<NoisyTargets> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: 'chaos-noisy-seed' });
  await client.connect();
  let quiet: { organizationId: number; groupId: number; scimToken: string };
  let noisy: typeof quiet;
  try {
    quiet = await seedOrganization(client, { name: 'Quiet Co', alias: 'quiet', prefix: 'Q', users: 4, drives: 200 });
    noisy = await seedOrganization(client, {
      name: 'Noisy Corp',
      alias: 'noisy',
      prefix: 'N',
      users: sizes.noisyUsers,
      drives: sizes.noisyDrives,
    });
  } finally {
    await client.end();
  }
  const token = async (userId: string) => {
    const account = accounts.find((a) => a.userId === userId);
    if (!account) throw new Error(`no sign-in account for ${userId}`);
    return passwordToken(issuer, { username: account.username, password: account.password, scope });
  };
  return {
    quiet: {
      users: [
        { userId: 'Q000000002', token: await token('Q000000002') },
        { userId: 'Q000000003', token: await token('Q000000003') },
      ],
      scimToken: quiet.scimToken,
      userName: 'quiet4@quiet.example',
    },
    noisy: {
      scimToken: noisy.scimToken,
      groupAdminToken: await token('N000000001'),
      groupId: noisy.groupId,
      driver: { userId: 'N000000002', token: await token('N000000002') },
    },
  };
}

async function seedOrganization(
  client: pg.Client,
  o: { name: string; alias: string; prefix: string; users: number; drives: number },
): Promise<{ organizationId: number; groupId: number; scimToken: string }> {
  const domain = `${o.alias}.example`;
  const { rows } = await client.query<{ id: string }>(
    `INSERT INTO users.organizations (name, alias) VALUES ($1, $2) RETURNING id`,
    [o.name, o.alias],
  );
  const organizationId = Number(rows[0]!.id);
  // The tables' organization columns take the declared organization (as the services declare theirs).
  await client.query(`SELECT set_config('${ORGANIZATION_SETTING}', $1, false)`, [String(organizationId)]);
  const id = `'${o.prefix}' || lpad(g::text, 9, '0')`;
  await client.query(
    `INSERT INTO users.users (id, organization_id, user_name, given_name, family_name, formatted_name, emails, timezone)
     SELECT ${id}, $1, '${o.alias}' || g || '@${domain}', 'Member', 'No ' || g, 'Member No ' || g,
            jsonb_build_array(jsonb_build_object('value', '${o.alias}' || g || '@${domain}', 'type', 'work', 'primary', true)),
            'Europe/London'
       FROM generate_series(1, $2::int) g`,
    [organizationId, o.users],
  );
  const members = Math.min(100, o.users);
  await client.query(
    `INSERT INTO groups.member_organizations (user_id, organization_id)
     SELECT ${id}, $1 FROM generate_series(1, $2::int) g`,
    [organizationId, members],
  );
  const team = await client.query<{ id: string }>(
    `INSERT INTO groups.teams (display_name, organization_id) VALUES ($1, $2) RETURNING id`,
    [`${o.name} Fleet`, organizationId],
  );
  const groupId = Number(team.rows[0]!.id);
  await client.query(
    `INSERT INTO groups.team_members (team_id, user_id, is_admin, is_driver, organization_id)
     SELECT $1, ${id}, g = 1, g <> 1, $2 FROM generate_series(1, $3::int) g`,
    [groupId, organizationId, members],
  );
  // Drives of the drivers 2…21 (the admin drives none), over the last 90 days.
  const drivers = Math.max(1, Math.min(20, members - 1));
  await client.query(
    `INSERT INTO drives.drives (organization_id, user_id, started_at, ended_at, distance_amount, distance_units,
                                value_amount, value_currency, entry, classification, purpose, created_at, modified_at)
     SELECT $1, '${o.prefix}' || lpad((2 + g % $2::int)::text, 9, '0'), t, t + interval '30 minutes', 12.5, 'mi', 875,
            'USD', 'automatic', (ARRAY['business', 'business', 'personal'])[1 + g % 3], 'Client visit',
            t + interval '1 hour', t + interval '1 hour'
       FROM (SELECT g, date_trunc('milliseconds', now() - interval '90 days' * (g::float / $3::int)) AS t
               FROM generate_series(1, $3::int) g) s`,
    [organizationId, drivers, o.drives],
  );
  await client.query(
    `INSERT INTO drives.drive_reports (organization_id, drive_id, group_id, status, reported_at, modified_at, ended_at)
     SELECT $1, d.id, $2, 'submitted', d.modified_at, d.modified_at, d.ended_at
       FROM drives.drives d
      WHERE d.organization_id = $1 AND d.classification = 'business' AND d.id % 2 = 0`,
    [organizationId, groupId],
  );
  const scimToken = newScimSecretToken();
  await client.query(
    `INSERT INTO users.scim_tokens (id, organization_id, name, secret_sha256) VALUES (gen_random_uuid(), $1, $2, $3)`,
    [organizationId, 'noisy-neighbour drill', createHash('sha256').update(scimToken).digest()],
  );
  await client.query('ANALYZE users.users');
  await client.query('ANALYZE drives.drives');
  await client.query('ANALYZE drives.drive_reports');
  return { organizationId, groupId, scimToken };
}
