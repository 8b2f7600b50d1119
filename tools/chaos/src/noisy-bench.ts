// `npm run bench:noisy`: the noisy neighbour of `npm run chaos` on its own (noisy-neighbour.ts), with its figures per
// organization and its verdict; exits 1 when the verdict fails.
//   (no --url)  starts the chaos stack (two replicas of everything on loopback), seeds a quiet and a noisy organization
//               into it, runs the scenario and stops the stack.
//   --url URL   against a running `npm start` (CONTRACT §6, §7): Demo Org is the quiet organization (its four users and
//               its provisioning client `mileage-scim`), Globex the noisy one (`mileage-scim-globex`, Erin's team, Frank's
//               drives), first provisioned through SCIM up to --noisy-users users (`noisy-<n>@globex.example`, kept).
//   --smoke     seconds: the statuses judged, the p99 ratio printed only (too few answers for a p99).
import { passwordToken, scimClientToken } from '@mileage/devstack';
import { parseArgs } from 'node:util';
import {
  assertLoopback,
  formatVerdict,
  judgeNoisyNeighbour,
  NOISY_RULES,
  noisyNeighbourAccounts,
  runNoisyNeighbour,
  seedNoisyNeighbours,
  type NoisyTargets,
  type ScenarioOptions,
} from './noisy-neighbour';
import { SCOPES, startChaosStack } from './stack';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    issuer: { type: 'string', default: 'http://127.0.0.1:8081/realms/mileage' },
    smoke: { type: 'boolean', default: false },
    'quiet-seconds': { type: 'string' },
    'flood-seconds': { type: 'string' },
    /** The quiet organization's requests a second (default 25 on the started stack; 6 on `npm start`, within its limits). */
    'quiet-rate': { type: 'string' },
    /** The noisy organization's requests in flight. */
    concurrency: { type: 'string', default: '20' },
    'noisy-users': { type: 'string', default: '2400' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(`npm run bench:noisy [-- options]: one organization's flood beside another's ordinary load.
  (no --url)            start the chaos stack, seed a quiet and a noisy organization, run, stop
  --url URL             against a running npm start (Demo Org quiet, Globex noisy; loopback only)
  --issuer URL          its identity provider (default http://127.0.0.1:8081/realms/mileage)
  --noisy-users N       Globex provisioned through SCIM up to N noisy-<n> users first (default 2400)
  --quiet-seconds S     the quiet organization alone, before the flood and again after it (default 10 each; 20
                        with --url)
  --flood-seconds S     beside the flood (default 20)
  --quiet-rate R        its requests a second (default 25; 6 with --url, within its per-caller limits)
  --concurrency N       the noisy organization's requests in flight (default 20)
  --smoke               2 s + 3 s + 2 s, statuses judged, the p99 ratio printed only
Exits 1 when the verdict fails (docs/operations.md, "Faults, measured", item 10).
`);
  process.exit(0);
}

const log = (msg: string) => process.stderr.write(`[bench:noisy ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

function count(name: string, value: string | undefined, fallback: number, max: number): number {
  const n = value === undefined ? fallback : Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > max) {
    process.stderr.write(`--${name}: a number above 0, at most ${max}\n`);
    process.exit(2);
  }
  return n;
}

const onNpmStart = values.url !== undefined;
// At least 50 quiet answers alone on each side of the flood (NOISY_RULES): at 6 a second, 20 s.
const quietSeconds = count('quiet-seconds', values['quiet-seconds'], values.smoke ? 2 : onNpmStart ? 20 : 10, 120);
const scenario = {
  quietSeconds,
  quietAfterSeconds: quietSeconds,
  floodSeconds: count('flood-seconds', values['flood-seconds'], values.smoke ? 3 : 20, 300),
  quietRate: count('quiet-rate', values['quiet-rate'], onNpmStart ? 6 : 25, 200),
  noisyConcurrency: count('concurrency', values.concurrency, 20, 200),
  noisyMaxRequests: 50_000,
  retryPauseCapMs: 500,
  timeoutMs: 10_000,
};
const noisyUsers = count('noisy-users', values['noisy-users'], 2400, 20_000);

async function main(): Promise<void> {
  let run;
  if (values.url) {
    const url = values.url.replace(/\/$/, '');
    assertLoopback(url);
    assertLoopback(values.issuer);
    const targets = await npmStartTargets(url, values.issuer, noisyUsers);
    log(`the scenario: ${describeScenario(scenario)}`);
    run = await runNoisyNeighbour({ targets, gateways: [url], ...scenario });
  } else {
    log('starting the chaos stack');
    const accounts = noisyNeighbourAccounts();
    const stack = await startChaosStack({ users: 100, drives: 1_000, log, accounts });
    process.once('SIGINT', () => void stack.stop().finally(() => process.exit(130)));
    try {
      log(`seeding a quiet and a noisy organization (${noisyUsers} users)`);
      const targets = await seedNoisyNeighbours(
        stack.adminUrl,
        stack.issuer,
        accounts,
        { noisyUsers, noisyDrives: 8_000 },
        SCOPES,
      );
      log(`the scenario: ${describeScenario(scenario)}`);
      run = await runNoisyNeighbour({
        targets,
        gateways: [stack.gateways.a.url, stack.gateways.b.url],
        ...scenario,
      });
    } finally {
      await stack.stop();
    }
  }
  // A smoke run has too few answers for a p99: its statuses are judged.
  const rules = values.smoke ? { maxP99Ratio: Infinity, minQuietSamples: 20 } : NOISY_RULES;
  const verdict = judgeNoisyNeighbour(run, rules);
  process.stdout.write(`${formatVerdict(verdict, rules)}\n`);
  process.exit(verdict.quietProblems.length || verdict.noisyProblems.length ? 1 : 0);
}

function describeScenario(s: Omit<ScenarioOptions, 'targets' | 'gateways'>): string {
  return (
    `${s.quietSeconds} s quiet alone at ${s.quietRate}/s, then ${s.floodSeconds} s beside ` +
    `${s.noisyConcurrency} noisy requests in flight, then ${s.quietAfterSeconds} s alone again`
  );
}

/** Demo Org quiet, Globex noisy: the development provider's tokens, Globex provisioned up to `users` first. */
async function npmStartTargets(url: string, issuer: string, users: number): Promise<NoisyTargets> {
  const signIn = (username: string) => passwordToken(issuer, { username, password: 'demo', scope: SCOPES });
  const globexScim = await scimClientToken(issuer, 'scim-globex-dev-secret', 'mileage-scim-globex');
  await provision(url, globexScim, users);
  const erin = await signIn('erin@globex.example');
  const groups = await fetch(`${url}/v1/groups`, { headers: { authorization: `Bearer ${erin}` } });
  if (!groups.ok) throw new Error(`Globex's groups as Erin: ${groups.status} ${await groups.text()}`);
  const groupId = ((await groups.json()) as { resources: { id: number }[] }).resources[0]?.id;
  if (groupId === undefined) throw new Error('Erin administers no Globex group');
  const quietUsers = [
    ['AliceAdm01', 'alice@example.com'],
    ['BobDriver1', 'bob@example.com'],
    ['CarolDrv01', 'carol@example.com'],
    ['DaveSolo01', 'dave@example.com'],
  ];
  return {
    quiet: {
      users: await Promise.all(
        quietUsers.map(async ([userId, name]) => ({ userId: userId!, token: await signIn(name!) })),
      ),
      scimToken: await scimClientToken(issuer, 'scim-dev-secret', 'mileage-scim'),
      userName: 'carol@example.com',
    },
    noisy: {
      scimToken: globexScim,
      groupAdminToken: erin,
      groupId,
      driver: { userId: 'FrankDrv01', token: await signIn('frank@globex.example') },
    },
  };
}

/** Provisions Globex's `noisy-<n>@globex.example` through SCIM until it has `users` of them (a 409: already there). */
async function provision(url: string, token: string, users: number): Promise<void> {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' };
  const filter = encodeURIComponent('userName sw "noisy-"');
  const res = await fetch(`${url}/scim/v2/Users?count=1&filter=${filter}`, { headers });
  if (!res.ok) throw new Error(`counting Globex's users: ${res.status} ${await res.text()}`);
  const have = ((await res.json()) as { totalResults: number }).totalResults;
  if (have >= users) return;
  log(`provisioning Globex: ${have} of ${users} noisy-<n> users there`);
  let next = 1;
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next <= users) {
        const n = next++;
        const userName = `noisy-${n}@globex.example`;
        for (;;) {
          const created = await fetch(`${url}/scim/v2/Users`, {
            method: 'POST',
            headers,
            body: JSON.stringify({
              schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
              userName,
              name: { givenName: 'Noisy', familyName: `No ${n}` },
              emails: [{ value: userName, type: 'work', primary: true }],
            }),
          });
          await created.arrayBuffer();
          if (created.status === 201 || created.status === 409) break;
          if (created.status === 429) await sleep(Number(created.headers.get('retry-after') ?? '1') * 1000);
          else throw new Error(`provisioning ${userName}: ${created.status}`);
        }
      }
    }),
  );
  log(`provisioned Globex up to ${users} users`);
}

main().catch((err: unknown) => {
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(2);
});
