// The chart on a real Kubernetes API server (started by ci.sh, which sets the environment read below). Every expectation
// is derived from the chart as `helm template` renders it (which Jobs are hooks, which Deployments exist, which pods read
// a changed value, what uninstall keeps), then checked against what the server did, observed through its API.
import { strict as assert } from 'node:assert';
import { execFile, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual, promisify } from 'node:util';

const { KUBE_SERVER, KUBE_TOKEN, HELM, YAML2JSON, CRDS, NODE_EXTRA_CA_CERTS } = process.env;
const chart = join(dirname(fileURLToPath(import.meta.url)), '../helm/mileage');
const issuerCli = join(dirname(fileURLToPath(import.meta.url)), '../../packages/pki/dist/issue-grpc-certificates.js');
const valueSets = readdirSync(join(chart, 'ci'))
  .filter((file) => file.endsWith('.yaml'))
  .map((file) => file.slice(0, -'.yaml'.length));
const release = 'mileage';
const WAIT = '5m0s';
// Enforced on pods; the warning is what a workload (a Deployment, a Job) gets, since only its pods are judged.
const restricted = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/enforce-version': 'latest',
  'pod-security.kubernetes.io/warn': 'restricted',
  'pod-security.kubernetes.io/warn-version': 'latest',
};

// ------------------------------------------------------------------------------------------------ the API, Helm
async function api(method, path, body, contentType = 'application/json') {
  const response = await fetch(KUBE_SERVER + path, {
    method,
    headers: { authorization: `Bearer ${KUBE_TOKEN}`, accept: 'application/json', 'content-type': contentType },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text ? JSON.parse(text) : undefined,
    warning: response.headers.get('warning'),
  };
}

async function ok(method, path, body, contentType) {
  const response = await api(method, path, body, contentType);
  assert.ok(response.status < 300, `${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

function run(command, args, input, env = process.env) {
  const result = spawnSync(command, args, { input, env, encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.equal(result.status, 0, `${command} ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

const helm = (...args) => run(HELM, args);
// For the commands watched while they run: the event loop must stay free to read the watches.
const helmAsync = (...args) => promisify(execFile)(HELM, args, { maxBuffer: 64 << 20 });
const values = (set) => ['-f', join(chart, 'ci', `${set}.yaml`)];
let kubeVersion;

/** The chart's objects as `helm template` renders them for this server (hooks included). */
function render(set, ...extra) {
  const yaml = helm(
    'template',
    release,
    chart,
    '-n',
    namespaceOf(set),
    '--kube-version',
    kubeVersion,
    ...values(set),
    ...extra,
  );
  return JSON.parse(run(YAML2JSON, [], yaml));
}

// The API path of a kind, from the server's discovery documents.
const discovery = new Map();
async function resourceOf(apiVersion, kind) {
  if (!discovery.has(apiVersion)) {
    const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    discovery.set(apiVersion, { path, resources: (await ok('GET', path)).resources });
  }
  const { path, resources } = discovery.get(apiVersion);
  const resource = resources.find((r) => r.kind === kind && !r.name.includes('/'));
  assert.ok(resource, `the server does not serve ${kind} in ${apiVersion}`);
  return { ...resource, groupPath: path };
}

async function pathOf(object, namespace = object.metadata.namespace) {
  const r = await resourceOf(object.apiVersion, object.kind);
  const scope = r.namespaced ? `/namespaces/${namespace}` : '';
  return `${r.groupPath}${scope}/${r.name}${object.metadata.name ? `/${object.metadata.name}` : ''}`;
}

/** Polls a real check until it returns a value other than undefined (the API has no "tell me when" for these). */
async function until(what, check, seconds = 120) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    assert.ok(Date.now() < deadline, `${what}: not within ${seconds} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Records every change of one collection from now on. Resource versions of one etcd are its revisions, one counter
 * for every kind, so they order changes across collections where timestamps (whole seconds) cannot.
 */
async function watch(collection) {
  const list = await ok('GET', collection);
  const from = list.metadata.resourceVersion;
  const controller = new AbortController();
  const events = [];
  const response = await fetch(`${KUBE_SERVER}${collection}?watch=1&resourceVersion=${from}`, {
    headers: { authorization: `Bearer ${KUBE_TOKEN}` },
    signal: controller.signal,
  });
  assert.equal(response.status, 200, `watch ${collection}`);
  const reading = (async () => {
    let buffered = '';
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) {
        buffered += decoder.decode(chunk, { stream: true });
        let newline;
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const { type, object } = JSON.parse(buffered.slice(0, newline));
          buffered = buffered.slice(newline + 1);
          events.push({ type, object, revision: BigInt(object.metadata.resourceVersion) });
        }
      }
    } catch (error) {
      if (error.name !== 'AbortError') throw error;
    }
  })();
  return {
    events,
    existing: new Set(names(list.items)),
    async stop() {
      controller.abort();
      await reading;
    },
  };
}

const names = (objects) => objects.map((o) => o.metadata.name).sort();
const byKind = (objects, kind) => objects.filter((o) => o.kind === kind);
const hookOf = (o) => o.metadata.annotations?.['helm.sh/hook'] ?? '';
const namespaceOf = (set) => `chart-${set}`;

async function createNamespace(name, labels) {
  await ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
  // The namespace's default ServiceAccount (the migration Jobs' pods use it) comes from the controller-manager.
  await until(`${name}'s default ServiceAccount`, async () =>
    (await api('GET', `/api/v1/namespaces/${name}/serviceaccounts/default`)).status === 200 ? true : undefined,
  );
}

/** Each Deployment's generation, pod template and ReplicaSets now. */
async function deploymentsNow(namespace) {
  const deployments = (await ok('GET', `/apis/apps/v1/namespaces/${namespace}/deployments`)).items;
  const replicaSets = (await ok('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets`)).items;
  return new Map(
    deployments.map((d) => [
      d.metadata.name,
      {
        generation: d.metadata.generation,
        template: d.spec.template,
        status: d.status,
        replicas: d.spec.replicas,
        replicaSets: names(
          replicaSets.filter((rs) => rs.metadata.ownerReferences?.some((o) => o.uid === d.metadata.uid)),
        ),
      },
    ]),
  );
}

/**
 * Each Deployment once rolled out completely: its controller saw the last change and all its pods are new and ready.
 * Polled: an autoscaler may still raise its replicas after Helm's wait (production's gateway: 1 to 3).
 */
async function rolledOut(namespace) {
  let problems;
  const check = async () => {
    const deployments = await deploymentsNow(namespace);
    problems = [...deployments].flatMap(([name, { status: s, generation, replicas }]) =>
      s.observedGeneration !== generation || s.updatedReplicas !== replicas || s.readyReplicas !== replicas
        ? [`${name}: ${JSON.stringify({ generation, replicas, status: s })}`]
        : [],
    );
    return problems.length === 0 ? deployments : undefined;
  };
  return until('every Deployment rolled out', check).catch((error) =>
    assert.fail(`${error.message}\n${problems.join('\n')}`),
  );
}

/**
 * What a component's pods read, resolved: the pod template without its annotations, and the value of every
 * secretKeyRef the chart itself writes. Two renders whose inputs differ for a Deployment must roll it; equal ones
 * must not.
 */
function podInputs(objects) {
  const secrets = new Map(byKind(objects, 'Secret').map((s) => [s.metadata.name, s.stringData ?? {}]));
  return new Map(
    byKind(objects, 'Deployment').map((d) => {
      const { annotations: _checksums, ...metadata } = d.spec.template.metadata;
      const read = d.spec.template.spec.containers.flatMap((c) =>
        (c.env ?? [])
          .map((e) => e.valueFrom?.secretKeyRef)
          .filter(Boolean)
          .map(({ name, key }) => [name, key, secrets.get(name)?.[key]]),
      );
      return [d.metadata.name, JSON.stringify({ metadata, spec: d.spec.template.spec, read })];
    }),
  );
}

/**
 * The hook Jobs a Helm command runs, by phase: those whose `helm.sh/hook` names `pre-<command>` run before the
 * release's other objects are applied, `post-<command>` after they are (with --wait: ready).
 */
function hookJobsOf(objects, command) {
  const jobs = byKind(objects, 'Job');
  const inPhase = (phase) => names(jobs.filter((j) => hookOf(j).split(',').includes(`${phase}-${command}`)));
  return { pre: inPhase('pre'), post: inPhase('post') };
}

/**
 * While Helm runs `args`: each Job the command created, when it was created and when it completed, and each ReplicaSet
 * it created; Helm's stderr. Only Jobs created during the command count, so a kept Job of an earlier command (deleted
 * and made again under a before-hook-creation policy) cannot pass for this one's.
 */
async function observeRollout(namespace, hooks, ...args) {
  const jobsPath = `/apis/batch/v1/namespaces/${namespace}/jobs`;
  const replicaSetsPath = `/apis/apps/v1/namespaces/${namespace}/replicasets`;
  const jobs = await watch(jobsPath);
  const replicaSets = await watch(replicaSetsPath);
  const expected = [...hooks.pre, ...hooks.post];
  const jobRuns = () => {
    const runs = new Map();
    for (const { type, object, revision } of jobs.events) {
      if (type === 'ADDED') runs.set(object.metadata.uid, { name: object.metadata.name, created: revision });
      const run = runs.get(object.metadata.uid);
      const done = object.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True');
      if (run && done && run.completed === undefined) run.completed = revision;
    }
    return new Map([...runs.values()].map((run) => [run.name, run]));
  };
  const completed = () => [...jobRuns()].filter(([, run]) => run.completed !== undefined).map(([name]) => name);
  let stderr;
  try {
    ({ stderr } = await helmAsync(...args));
    // Helm is done: wait until the watches have delivered every completion and every new ReplicaSet.
    const added = () => names(replicaSets.events.filter((e) => e.type === 'ADDED').map((e) => e.object));
    const newReplicaSets = names((await ok('GET', replicaSetsPath)).items).filter((n) => !replicaSets.existing.has(n));
    await until('the watches caught up', async () =>
      expected.every((j) => completed().includes(j)) && newReplicaSets.every((n) => added().includes(n))
        ? true
        : undefined,
    );
  } finally {
    await jobs.stop();
    await replicaSets.stop();
  }
  const created = replicaSets.events.filter((e) => e.type === 'ADDED');
  return { jobs: jobRuns(), created, stderr };
}

/**
 * Every hook Job of the command was created and completed, and no other Job; the pre- hooks all completed before the
 * command's first ReplicaSet was created, the post- hooks were created after its last one.
 */
function assertHookOrder(hooks, { jobs, created }, phase) {
  const ran = [...jobs.keys()].sort();
  assert.deepEqual(ran, [...hooks.pre, ...hooks.post].sort(), `${phase}: the Jobs the command created`);
  for (const name of ran) assert.ok(jobs.get(name).completed !== undefined, `${phase}: Job ${name} did not complete`);
  const latest = (revisions) => revisions.reduce((a, b) => (a > b ? a : b), 0n);
  const lastPreCompletion = latest(hooks.pre.map((name) => jobs.get(name).completed));
  for (const { object, revision } of created) {
    assert.ok(
      revision > lastPreCompletion,
      `${phase}: ReplicaSet ${object.metadata.name} (revision ${revision}) created before the last pre-${phase} hook Job completed (revision ${lastPreCompletion})`,
    );
  }
  const lastReplicaSet = latest(created.map((e) => e.revision));
  for (const name of hooks.post) {
    assert.ok(
      jobs.get(name).created > lastReplicaSet,
      `${phase}: post-${phase} hook Job ${name} (revision ${jobs.get(name).created}) created before the last ReplicaSet (revision ${lastReplicaSet})`,
    );
  }
  return { pre: hooks.pre.length, post: hooks.post.length, replicaSets: created.length };
}

/**
 * Everything left in a namespace, of every kind the server lists there, but what the namespace itself has and what
 * the `kept` objects (Kind/name) own: a kept Job keeps its pods.
 */
async function leftIn(namespace, kept) {
  const left = [];
  const groups = [{ version: 'v1', path: '/api/v1' }];
  for (const g of (await ok('GET', '/apis')).groups) {
    groups.push({ version: g.preferredVersion.groupVersion, path: `/apis/${g.preferredVersion.groupVersion}` });
  }
  for (const g of groups) {
    for (const r of (await ok('GET', g.path)).resources) {
      if (!r.namespaced || r.name.includes('/') || !r.verbs.includes('list')) continue;
      if (r.kind === 'Event') continue; // events outlive their objects by design (one hour)
      const items = (await ok('GET', `${g.path}/namespaces/${namespace}/${r.name}`)).items;
      for (const item of items) {
        const name = item.metadata.name;
        const namespaceOwn =
          (r.kind === 'ServiceAccount' && name === 'default') ||
          (r.kind === 'ConfigMap' && name === 'kube-root-ca.crt');
        const ownedByKept = item.metadata.ownerReferences?.some((o) => kept.includes(`${o.kind}/${o.name}`));
        if (!namespaceOwn && !ownedByKept) left.push(`${r.kind}/${name}`);
      }
    }
  }
  return left.sort();
}

// ----------------------------------------------------------------------------- the chart-managed gRPC certificates
const ISSUER = 'grpc-issuer';
const isIssuer = (o) => o.metadata.labels?.['app.kubernetes.io/component'] === ISSUER;

/**
 * Runs the issuer CLI from this machine as the chart's hook Job would (kwok runs no container): with the Job's
 * GRPC_ISSUER_CONFIG from `objects` (a render), as the Job's own ServiceAccount with the Role the chart grants it (made
 * from the render, a token from the TokenRequest API, then deleted as Helm deletes the succeeded hooks).
 */
async function runIssuer(namespace, objects, ...args) {
  const job = byKind(objects, 'Job').find(isIssuer);
  const rbac = objects.filter((o) => isIssuer(o) && ['ServiceAccount', 'Role', 'RoleBinding'].includes(o.kind));
  assert.equal(rbac.length, 3, 'the issuer has a ServiceAccount, a Role and a RoleBinding');
  for (const object of rbac) await ok('POST', await pathOf({ ...object, metadata: {} }, namespace), object);
  const dir = mkdtempSync(join(tmpdir(), 'issuer-'));
  try {
    const account = job.spec.template.spec.serviceAccountName;
    const { status } = await ok('POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${account}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 600 },
    });
    writeFileSync(join(dir, 'token'), status.token);
    const env = Object.fromEntries(job.spec.template.spec.containers[0].env.map((e) => [e.name, e.value]));
    const out = run(
      'node',
      [
        issuerCli,
        '--api-server',
        KUBE_SERVER,
        '--token-file',
        join(dir, 'token'),
        '--ca-file',
        NODE_EXTRA_CA_CERTS,
        ...args,
      ],
      undefined,
      { ...process.env, ...env },
    );
    const lines = out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    return lines.at(-1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    for (const object of rbac) await ok('DELETE', await pathOf(object, namespace));
  }
}

const pems = (bundle) => bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
const decoded = (secret, key) => Buffer.from(secret.data[key] ?? '', 'base64').toString();

/** The issuer's Secrets now (the CA's and each component's, as the Job's configuration names them). */
async function issuerSecrets(namespace, objects) {
  const job = byKind(objects, 'Job').find(isIssuer);
  const config = JSON.parse(
    job.spec.template.spec.containers[0].env.find((e) => e.name === 'GRPC_ISSUER_CONFIG').value,
  );
  const get = (name) => ok('GET', `/api/v1/namespaces/${namespace}/secrets/${name}`);
  const ca = await get(config.caSecret);
  const components = await Promise.all(
    config.certificates.map(async (spec) => ({ spec, secret: await get(spec.secret) })),
  );
  return {
    config,
    ca,
    components,
    versions: [ca, ...components.map((c) => c.secret)].map((s) => s.metadata.resourceVersion),
  };
}

// -------------------------------------------------------------------------------------------------- the cluster
before(async () => {
  kubeVersion = (await ok('GET', '/version')).gitVersion;
  // The CRDs of the chart's optional kinds (ServiceMonitor, PrometheusRule, Certificate), as their projects ship them.
  for (const file of readdirSync(CRDS).filter((f) => f.endsWith('.yaml'))) {
    for (const crd of JSON.parse(run(YAML2JSON, [], readFileSync(join(CRDS, file), 'utf8')))) {
      await ok('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
      await until(`CRD ${crd.metadata.name} established`, async () => {
        const { status } = await ok(
          'GET',
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`,
        );
        return status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ? true : undefined;
      });
    }
  }
  // One node for kwok to play the kubelet of, with the labels the chart's scheduling rules name and the capacity it
  // requests (ephemeral storage included).
  const capacity = { cpu: '64', memory: '256Gi', pods: '250', 'ephemeral-storage': '200Gi' };
  await ok('POST', '/api/v1/nodes', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: 'kwok-node-0',
      labels: {
        type: 'kwok',
        'kubernetes.io/hostname': 'kwok-node-0',
        'kubernetes.io/os': 'linux',
        'topology.kubernetes.io/zone': 'zone-a',
      },
      annotations: { 'kwok.x-k8s.io/node': 'fake' },
    },
    status: { capacity, allocatable: capacity },
  });
  await until('the kwok node Ready', async () => {
    const node = await ok('GET', '/api/v1/nodes/kwok-node-0');
    return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
  });
});

// ---------------------------------------------------------------------------------------------------- the tests
for (const set of valueSets) {
  describe(`value set ${set}`, () => {
    const namespace = namespaceOf(set);
    let rendered;
    let installed;
    // Every render the release was installed or upgraded with: what uninstall leaves is kept by one of them.
    const renders = [];
    const deploymentNames = () => names(byKind(rendered, 'Deployment'));

    before(async () => {
      rendered = render(set);
      renders.push(rendered);
      assert.ok(deploymentNames().length > 0, 'the chart renders no Deployment');
      await createNamespace(namespace, restricted);
    });

    test('helm install --wait in a namespace that enforces restricted Pod Security: hook Jobs complete first', async () => {
      const hooks = hookJobsOf(rendered, 'install');
      assert.ok(hooks.pre.length > 0, 'the chart renders no pre-install migration Job');
      const observed = await observeRollout(
        namespace,
        hooks,
        ...['install', release, chart, '-n', namespace, ...values(set), '--wait', '--timeout', WAIT],
      );
      const counted = assertHookOrder(hooks, observed, 'install');
      // The namespace warns of what restricted would refuse, for workloads too: nothing here.
      assert.doesNotMatch(observed.stderr, /PodSecurity/, 'Helm relayed a Pod Security warning');
      assert.equal(counted.replicaSets, deploymentNames().length, 'one ReplicaSet per Deployment');
      installed = await rolledOut(namespace);
      assert.deepEqual([...installed.keys()].sort(), deploymentNames());
      console.log(
        `${set}: ${counted.pre} pre-install hook Jobs completed before ${counted.replicaSets} ReplicaSets were created, ${counted.post} post-install hook Jobs after`,
      );
    });

    test('every object the chart renders is on the server (hook Jobs deleted on success, as their policy says)', async () => {
      const kinds = new Map();
      for (const object of rendered) {
        const { status } = await api('GET', await pathOf(object, namespace));
        const deletedOnSuccess = (object.metadata.annotations?.['helm.sh/hook-delete-policy'] ?? '').includes(
          'hook-succeeded',
        );
        assert.equal(status, deletedOnSuccess ? 404 : 200, `${object.kind}/${object.metadata.name}`);
        kinds.set(object.kind, (kinds.get(object.kind) ?? 0) + 1);
      }
      const accepted = [...kinds].map(([kind, n]) => `${n} ${kind}`).join(', ');
      console.log(`${set}: accepted by the server: ${accepted}`);
      const hpas = byKind(rendered, 'HorizontalPodAutoscaler');
      assert.ok(
        hpas.every((h) => h.apiVersion === 'autoscaling/v2'),
        'HPAs are autoscaling/v2',
      );
    });

    if (set === 'minimal') {
      let beforeUpgrade;
      test('helm upgrade of the cursor secret alone rolls only the Deployments that read it; hooks first', async () => {
        const changed = ['--set', `gateway.cursorSecret=${'c'.repeat(40)}`];
        const old = podInputs(rendered);
        const upgraded = render(set, ...changed);
        const next = podInputs(upgraded);
        const expected = deploymentNames().filter((name) => old.get(name) !== next.get(name));
        assert.ok(
          expected.length > 0 && expected.length < deploymentNames().length,
          `the cursor secret is read by ${expected}`,
        );
        beforeUpgrade = await deploymentsNow(namespace);
        const hooks = hookJobsOf(upgraded, 'upgrade');
        const observed = await observeRollout(
          namespace,
          hooks,
          ...['upgrade', release, chart, '-n', namespace, ...values(set), ...changed, '--wait', '--timeout', WAIT],
        );
        assertHookOrder(hooks, observed, 'upgrade');
        const now = await rolledOut(namespace);
        const rolled = [...now].filter(([name, d]) => !isDeepStrictEqual(d.template, beforeUpgrade.get(name).template));
        assert.deepEqual(rolled.map(([name]) => name).sort(), expected, 'the Deployments whose pod template changed');
        for (const [name] of rolled) {
          assert.ok(
            now.get(name).replicaSets.length > beforeUpgrade.get(name).replicaSets.length,
            `${name}: no new ReplicaSet`,
          );
        }
        console.log(
          `${set}: the cursor secret changed; rolled: ${rolled.map(([name]) => name).join(', ')} (of ${deploymentNames().length})`,
        );
      });

      test('helm rollback restores the first revision: values, Secret and pod templates', async () => {
        helm('rollback', release, '1', '-n', namespace, '--wait', '--timeout', WAIT);
        const valuesOf = (...revision) =>
          JSON.parse(helm('get', 'values', release, '-n', namespace, '-o', 'json', ...revision));
        assert.deepEqual(valuesOf(), valuesOf('--revision', '1'));
        const gatewaySecret = byKind(rendered, 'Secret').find((s) => s.stringData?.['cursor-secret']);
        const onServer = await ok('GET', `/api/v1/namespaces/${namespace}/secrets/${gatewaySecret.metadata.name}`);
        assert.equal(
          Buffer.from(onServer.data['cursor-secret'], 'base64').toString(),
          gatewaySecret.stringData['cursor-secret'],
        );
        const now = await rolledOut(namespace);
        for (const [name, d] of now)
          assert.deepEqual(d.template, installed.get(name).template, `${name}'s pod template`);
      });
    }

    let issued = [];
    // Only where the chart makes the certificates (its issuer hook Job renders); skipped elsewhere.
    const chartManaged = (t) =>
      byKind(rendered, 'Job').some(isIssuer) || (t.skip('no issuer Job in this value set'), false);
    {
      test('chart-managed gRPC certificates: the issuer, as its Role allows, makes each Secret with its SPIFFE id; a second run and an upgrade change nothing', async (t) => {
        if (!chartManaged(t)) return;
        const first = await runIssuer(namespace, rendered);
        assert.equal(first.ca, 'created');
        const now = await issuerSecrets(namespace, rendered);
        issued = [now.ca, ...now.components.map((c) => c.secret)].map((s) => `Secret/${s.metadata.name}`).sort();
        const ca = new X509Certificate(decoded(now.ca, 'tls.crt'));
        assert.ok(!now.ca.metadata.annotations?.['meta.helm.sh/release-name'], 'Helm does not own the CA Secret');
        for (const { spec, secret } of now.components) {
          assert.equal(secret.type, 'kubernetes.io/tls');
          const cert = new X509Certificate(decoded(secret, 'tls.crt'));
          const sans = cert.subjectAltName.split(', ');
          assert.deepEqual(
            sans.filter((n) => n.startsWith('URI:')),
            [`URI:${spec.spiffeId}`],
            spec.secret,
          );
          assert.deepEqual(
            sans.filter((n) => n.startsWith('DNS:')),
            spec.dnsNames.map((n) => `DNS:${n}`),
            spec.secret,
          );
          assert.ok(cert.verify(ca.publicKey), `${spec.secret} is signed by the CA`);
          assert.deepEqual(pems(decoded(secret, 'ca.crt')), pems(ca.toString()), `${spec.secret}: ca.crt is the CA`);
        }
        // The Deployments existed (the Job ran on this machine after the install): each was restarted once.
        assert.deepEqual(first.restarted.sort(), deploymentNames());
        const rolled = await rolledOut(namespace);
        for (const [name, d] of rolled)
          assert.match(d.template.metadata.annotations['grpc-tls.mileage/certificate'] ?? '', /^[0-9a-f]{16}$/, name);

        const second = await runIssuer(namespace, rendered);
        assert.equal(second.ca, 'unchanged');
        assert.deepEqual(second.restarted, []);
        assert.deepEqual(
          (await issuerSecrets(namespace, rendered)).versions,
          now.versions,
          'a second run writes nothing',
        );

        const hooks = hookJobsOf(rendered, 'upgrade');
        const observed = await observeRollout(
          namespace,
          hooks,
          ...['upgrade', release, chart, '-n', namespace, ...values(set), '--wait', '--timeout', WAIT],
        );
        assertHookOrder(hooks, observed, 'upgrade');
        assert.deepEqual((await issuerSecrets(namespace, rendered)).versions, now.versions, 'the upgrade kept them');
        const afterUpgrade = await runIssuer(namespace, rendered);
        assert.equal(afterUpgrade.ca, 'unchanged');
        assert.deepEqual((await issuerSecrets(namespace, rendered)).versions, now.versions, 'and so did its issuer');
        for (const [name, d] of await rolledOut(namespace))
          assert.deepEqual(d.template, rolled.get(name).template, `${name}: the upgrade kept the restart annotation`);
        console.log(`${set}: the issuer made ${issued.length} Secrets; a second run and an upgrade changed none`);
      });

      test('chart-managed gRPC certificates: CA rotation with overlap (prepare, activate, finish), the pods restarted at each step', async (t) => {
        if (!chartManaged(t)) return;
        const step = async (rotation) => {
          const before = await deploymentsNow(namespace);
          const report = await runIssuer(
            namespace,
            render(set, '--set', `grpcTls.chartManaged.caRotation=${rotation}`),
          );
          const now = await issuerSecrets(namespace, rendered);
          const after = await rolledOut(namespace);
          const restarted = [...after].filter(([n, d]) => d.generation !== before.get(n).generation).map(([n]) => n);
          assert.deepEqual(restarted.sort(), deploymentNames(), `${rotation}: every Deployment restarted`);
          return { report, now, trust: now.components.map((c) => pems(decoded(c.secret, 'ca.crt'))) };
        };
        const old = await issuerSecrets(namespace, rendered);
        const oldCa = decoded(old.ca, 'tls.crt');
        const prepared = await step('prepare');
        assert.equal(prepared.report.ca, 'prepared');
        const next = decoded(prepared.now.ca, 'next.crt');
        for (const [i, trust] of prepared.trust.entries()) {
          assert.deepEqual(trust, [...pems(oldCa), ...pems(next)], 'both CAs trusted');
          assert.equal(
            decoded(prepared.now.components[i].secret, 'tls.crt'),
            decoded(old.components[i].secret, 'tls.crt'),
          );
        }
        const activated = await step('activate');
        assert.equal(activated.report.ca, 'activated');
        assert.equal(decoded(activated.now.ca, 'tls.crt'), next, 'the prepared CA signs');
        const signing = new X509Certificate(next);
        for (const [i, trust] of activated.trust.entries()) {
          assert.deepEqual(trust, [...pems(next), ...pems(oldCa)], 'both CAs still trusted');
          assert.ok(
            new X509Certificate(decoded(activated.now.components[i].secret, 'tls.crt')).verify(signing.publicKey),
          );
        }
        const finished = await step('finish');
        assert.equal(finished.report.ca, 'finished');
        for (const trust of finished.trust) assert.deepEqual(trust, pems(next), 'the new CA alone');
        console.log(`${set}: CA rotated in three steps; ca.crt held both CAs from prepare to finish`);
      });
    }

    {
      // Only where the value set renders a CloudNativePG Cluster; skipped elsewhere.
      const onCloudNativePG = (t) =>
        byKind(rendered, 'Cluster').length > 0 || (t.skip('no Cluster in this value set'), false);
      // PostgreSQL on CloudNativePG: the restore (docs/operations-helm.md, "Restore on CloudNativePG") as its two
      // upgrades, each object admitted by the CRDs' schemas (CloudNativePG's, the Barman Cloud plugin's) on the server.
      const clusterPath = `/apis/postgresql.cnpg.io/v1/namespaces/${namespace}/clusters`;
      let source;
      let restoredName;
      test('CloudNativePG: install made the Cluster (WAL archived by the plugin), its ObjectStore and ScheduledBackup; expand ran after them', async (t) => {
        if (!onCloudNativePG(t)) return;
        const [cluster] = byKind(rendered, 'Cluster');
        source = cluster.metadata.name;
        restoredName = `${source}-2`;
        const onServer = await ok('GET', `${clusterPath}/${source}`);
        // The server defaults what the render leaves out (e.g. enabled: true); the archiver is as rendered.
        const archiver = (c) =>
          c.spec.plugins.filter((p) => p.isWALArchiver).map(({ name, parameters }) => ({ name, parameters }));
        assert.deepEqual(archiver(onServer), archiver(cluster), 'the WAL archiver as rendered');
        assert.equal(archiver(onServer)[0]?.name, 'barman-cloud.cloudnative-pg.io');
        assert.ok(onServer.spec.instances >= 2);
        assert.deepEqual(
          onServer.spec.managed.roles.map((r) => r.name).sort(),
          cluster.spec.managed.roles.map((r) => r.name).sort(),
        );
        const schedule = await ok(
          'GET',
          `/apis/postgresql.cnpg.io/v1/namespaces/${namespace}/scheduledbackups/${source}`,
        );
        assert.equal(schedule.spec.method, 'plugin');
        const hooks = hookJobsOf(rendered, 'install');
        assert.ok(
          hooks.post.some((j) => j.endsWith('-migrate')),
          'the expand migration Jobs are post-install hooks (the Cluster is made with the release)',
        );
      });

      test('CloudNativePG: a restore is a new Cluster from the backups, the old one kept, the services rolled to it', async (t) => {
        if (!onCloudNativePG(t)) return;
        const targetTime = new Date(Date.now() - 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
        const restore = [
          '--set',
          `postgres.cloudnativepg.clusterName=${restoredName},postgres.cloudnativepg.recovery.enabled=true`,
          '--set',
          `postgres.cloudnativepg.recovery.sourceClusterName=${source},postgres.cloudnativepg.recovery.targetTime=${targetTime}`,
          '--set',
          'migrations.enabled=false',
        ];
        const old = podInputs(rendered);
        const upgraded = render(set, ...restore);
        renders.push(upgraded);
        const next = podInputs(upgraded);
        const expected = deploymentNames().filter((name) => old.get(name) !== next.get(name));
        const before = await deploymentsNow(namespace);
        helm('upgrade', release, chart, '-n', namespace, ...values(set), ...restore, '--wait', '--timeout', WAIT);
        const restored = await ok('GET', `${clusterPath}/${restoredName}`);
        assert.equal(restored.spec.bootstrap.recovery.recoveryTarget.targetTime, targetTime);
        const origin = restored.spec.externalClusters.find((c) => c.name === restored.spec.bootstrap.recovery.source);
        assert.equal(origin.plugin.name, 'barman-cloud.cloudnative-pg.io');
        assert.equal(origin.plugin.parameters.serverName, source, 'restores the old Cluster’s backups');
        const kept = await ok('GET', `${clusterPath}/${source}`);
        assert.ok(!kept.metadata.deletionTimestamp, 'the old Cluster is kept (helm.sh/resource-policy: keep)');
        const now = await rolledOut(namespace);
        const rolled = [...now].filter(([name, d]) => !isDeepStrictEqual(d.template, before.get(name).template));
        assert.deepEqual(rolled.map(([name]) => name).sort(), expected, 'the Deployments with a database rolled');
        const urls = byKind(upgraded, 'Secret').flatMap((s) => Object.values(s.stringData ?? {}));
        assert.ok(
          urls.filter((u) => String(u).startsWith('postgres://')).every((u) => u.includes(`@${restoredName}-rw.`)),
          'every database URL names the restored Cluster',
        );
        console.log(
          `${set}: restored into ${restoredName} (target ${targetTime}); rolled ${rolled.map(([n]) => n).join(', ')}`,
        );
      });

      test('CloudNativePG: the upgrade after the restore runs the migrations before the rollout again', async (t) => {
        if (!onCloudNativePG(t)) return;
        const after = [
          '--set',
          `postgres.cloudnativepg.clusterName=${restoredName},postgres.cloudnativepg.recovery.enabled=false`,
        ];
        const upgraded = render(set, ...after);
        renders.push(upgraded);
        const hooks = hookJobsOf(upgraded, 'upgrade');
        assert.ok(
          hooks.pre.some((j) => j.endsWith('-migrate')),
          'expand is a pre-upgrade hook',
        );
        const observed = await observeRollout(
          namespace,
          hooks,
          ...['upgrade', release, chart, '-n', namespace, ...values(set), ...after, '--wait', '--timeout', WAIT],
        );
        assertHookOrder(hooks, observed, 'upgrade');
        const restored = await ok('GET', `${clusterPath}/${restoredName}`);
        assert.ok(
          restored.spec.bootstrap.initdb,
          'the Cluster spec as rendered (its bootstrap is read only at creation)',
        );
        await rolledOut(namespace);
      });
    }

    test('helm uninstall leaves only the hook resources and the resources Helm keeps (docs/operations-helm.md)', async () => {
      helm('uninstall', release, '-n', namespace, '--wait', '--timeout', WAIT);
      // The hooks not deleted on success, what the chart marks helm.sh/resource-policy: keep (the database and its
      // credentials), and the Secrets the certificate issuer made (Helm never owned them).
      const keptByHelm = (o) =>
        (hookOf(o) && !(o.metadata.annotations['helm.sh/hook-delete-policy'] ?? '').includes('hook-succeeded')) ||
        o.metadata.annotations?.['helm.sh/resource-policy'] === 'keep';
      const kept = [
        ...new Set(
          renders
            .flat()
            .filter(keptByHelm)
            .map((o) => `${o.kind}/${o.metadata.name}`)
            .concat(issued),
        ),
      ].sort();
      // The garbage collector removes ReplicaSets, pods and endpoint slices after their owners: wait for it.
      let left;
      await until('the namespace emptied but for the kept resources', async () => {
        left = await leftIn(namespace, kept);
        return JSON.stringify(left) === JSON.stringify(kept) ? true : undefined;
      }).catch((error) => {
        assert.deepEqual(left, kept, error.message);
      });
      console.log(`${set}: after uninstall: ${kept.length ? kept.join(', ') : 'nothing'}`);
    });
  });
}

describe('restricted Pod Security, enforced by the server', () => {
  const namespace = 'pod-security';
  const unlabelled = 'pod-security-off';
  let gateway;
  let pod;
  before(async () => {
    await createNamespace(namespace, restricted);
    await createNamespace(unlabelled, {});
    gateway = byKind(render(valueSets[0]), 'Deployment')[0];
    // The namespace's own account: the chart's does not exist here, and its lookup would refuse the pod first.
    pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'chart-pod' },
      spec: { ...gateway.spec.template.spec, serviceAccountName: 'default' },
    };
  });
  const asRoot = (spec) => ({
    ...spec,
    securityContext: { ...spec.securityContext, runAsNonRoot: false, runAsUser: 0 },
    containers: spec.containers.map((c) => ({
      ...c,
      securityContext: {
        ...c.securityContext,
        runAsNonRoot: false,
        runAsUser: 0,
        allowPrivilegeEscalation: true,
        privileged: true,
      },
    })),
  });

  test("the chart's own pod is admitted; the same pod as root and privileged is refused", async () => {
    const create = (ns, spec) => api('POST', `/api/v1/namespaces/${ns}/pods?dryRun=All`, { ...pod, spec });
    assert.equal((await create(namespace, pod.spec)).status, 201, "the chart's pod");
    const refused = await create(namespace, asRoot(pod.spec));
    assert.equal(refused.status, 403);
    assert.match(refused.body.message, /violates PodSecurity "restricted:latest"/);
    console.log(`refused: ${refused.body.message}`);
    // The namespace's label is what refuses it: without it the server admits the same pod.
    assert.equal((await create(unlabelled, asRoot(pod.spec))).status, 201, 'the root pod without the label');
  });

  test('a Deployment whose template bypasses the chart (root, privileged) never gets a pod', async () => {
    const deployment = {
      ...gateway,
      metadata: { name: 'bypass', namespace },
      spec: { ...gateway.spec, template: { ...gateway.spec.template, spec: asRoot(pod.spec) } },
    };
    const created = await api('POST', `/apis/apps/v1/namespaces/${namespace}/deployments`, deployment);
    assert.equal(created.status, 201, 'the Deployment itself is admitted (Pod Security judges pods)');
    assert.match(created.warning ?? '', /restricted:latest/, 'with a warning');
    const failure = await until('the ReplicaSet reports the refusal', async () => {
      const sets = (await ok('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets`)).items;
      const condition = sets.flatMap((rs) => rs.status?.conditions ?? []).find((c) => c.type === 'ReplicaFailure');
      return condition?.message;
    });
    assert.match(failure, /violates PodSecurity "restricted:latest"/);
    const pods = (await ok('GET', `/api/v1/namespaces/${namespace}/pods`)).items;
    assert.equal(pods.length, 0, 'no pod was created');
  });
});
