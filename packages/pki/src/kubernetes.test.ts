import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { main } from './issue-grpc-certificates';
import {
  ensureGrpcCertificates,
  type IssuerConfig,
  KubeClient,
  parseIssuerConfig,
  type Secret,
  subjectAltNames,
} from './kubernetes';

interface Stored {
  metadata: { name?: string; resourceVersion?: string };
  spec?: { template: { metadata: { annotations: Record<string, string> } } };
  [k: string]: unknown;
}

/** A fake API server on loopback: Secrets and Deployments of one namespace in memory, every write recorded. */
class FakeApi {
  objects = new Map<string, Stored>();
  writes: string[] = [];
  tokens: string[] = [];
  private version = 1;
  private server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      this.tokens.push(req.headers.authorization ?? '');
      const [status, answer] = this.handle(req.method!, req.url!, body ? JSON.parse(body) : undefined);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
  });
  url = '';

  async start() {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }
  stop() {
    this.server.close();
  }

  private handle(method: string, url: string, body: Stored | undefined): [number, unknown] {
    const match = /^\/(?:api\/v1|apis\/apps\/v1)\/namespaces\/([^/]+)\/(secrets|deployments)(?:\/([^/]+))?$/.exec(url);
    if (!match) return [404, { message: `no route ${url}` }];
    const [, , kind, name] = match;
    const key = `${kind}/${name ?? body?.metadata?.name}`;
    const current = this.objects.get(key);
    const notFound: [number, unknown] = [404, { message: `${key} not found` }];
    switch (method) {
      case 'GET':
        return current ? [200, current] : notFound;
      case 'POST':
        if (current) return [409, { message: `${key} exists` }];
        break;
      case 'PUT':
        if (!current) return notFound;
        if (body!.metadata.resourceVersion !== current.metadata.resourceVersion) return [409, { message: 'conflict' }];
        break;
      case 'PATCH': {
        if (!current) return notFound;
        const merged = structuredClone(current);
        Object.assign(merged.spec!.template.metadata.annotations, body!.spec!.template.metadata.annotations);
        body = merged;
        break;
      }
      default:
        return [405, {}];
    }
    this.writes.push(`${method} ${key}`);
    const stored = { ...body!, metadata: { ...body!.metadata, resourceVersion: String(++this.version) } };
    this.objects.set(key, stored);
    return [method === 'POST' ? 201 : 200, stored];
  }

  secret(name: string) {
    return this.objects.get(`secrets/${name}`) as Secret | undefined;
  }
  value(name: string, key: string) {
    const data = this.secret(name)?.data?.[key];
    return data === undefined ? undefined : Buffer.from(data, 'base64').toString();
  }
}

const COMPONENTS = ['gateway', 'users'];
const config = (over: Partial<IssuerConfig> = {}): IssuerConfig => ({
  namespace: 'mileage',
  caSecret: 'm-grpc-ca',
  release: 'm',
  validDays: 90,
  renewBeforeDays: 30,
  caValidDays: 3650,
  caRotation: '',
  certificates: COMPONENTS.map((c) => ({
    component: c,
    secret: `m-${c}-grpc-tls`,
    spiffeId: `spiffe://cluster.local/ns/mileage/sa/m-${c}`,
    dnsNames: [`m-${c}`, `m-${c}.mileage`, `m-${c}.mileage.svc`, `m-${c}.mileage.svc.cluster.local`],
    deployment: `m-${c}`,
  })),
  ...over,
});
const certsIn = (pem: string | undefined) =>
  (pem?.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map(
    (p) => new X509Certificate(p),
  );

describe('chart-managed gRPC certificates against a fake API server', () => {
  const api = new FakeApi();
  let client: KubeClient;
  before(async () => {
    await api.start();
    client = new KubeClient({ server: api.url, token: 'fake-token' });
  });
  after(() => api.stop());

  it('creates the CA and each Secret with its SPIFFE id, DNS names and the CA; a second run writes nothing', async () => {
    const report = await ensureGrpcCertificates(client, config());
    assert.equal(report.ca, 'created');
    assert.deepEqual(
      Object.values(report.secrets).map((s) => s.action),
      ['created', 'created'],
    );
    assert.deepEqual(report.restarted, [], 'no Deployment exists yet');
    const ca = new X509Certificate(api.value('m-grpc-ca', 'tls.crt')!);
    assert.equal(api.secret('m-grpc-ca')!.type, 'Opaque');
    for (const spec of config().certificates) {
      const secret = api.secret(spec.secret)!;
      assert.equal(secret.type, 'kubernetes.io/tls');
      assert.equal(secret.metadata.labels!['app.kubernetes.io/component'], spec.component);
      const cert = new X509Certificate(api.value(spec.secret, 'tls.crt')!);
      assert.deepEqual(subjectAltNames(cert), { uris: [spec.spiffeId], dns: spec.dnsNames, other: [] });
      assert.ok(cert.verify(ca.publicKey));
      assert.deepEqual(
        certsIn(api.value(spec.secret, 'ca.crt')).map((c) => c.fingerprint256),
        [ca.fingerprint256],
      );
    }
    assert.ok(api.tokens.every((t) => t === 'Bearer fake-token'));
    const writes = api.writes.length;
    const again = await ensureGrpcCertificates(client, config());
    assert.equal(again.ca, 'unchanged');
    assert.ok(Object.values(again.secrets).every((s) => s.action === 'unchanged'));
    assert.equal(api.writes.length, writes, 'the second run wrote nothing');
  });

  it('renews only the certificate whose names differ or that expires within the window, and restarts its pods', async () => {
    for (const c of COMPONENTS) {
      api.objects.set(`deployments/m-${c}`, {
        metadata: { name: `m-${c}`, resourceVersion: '1' },
        spec: { template: { metadata: { annotations: {} } } },
      });
    }
    const wanted = config();
    wanted.certificates[1]!.dnsNames.push('users.example');
    const before = api.value('m-gateway-grpc-tls', 'tls.crt');
    const report = await ensureGrpcCertificates(client, wanted);
    assert.equal(report.secrets['m-gateway-grpc-tls']!.action, 'unchanged');
    assert.equal(report.secrets['m-users-grpc-tls']!.action, 'issued');
    assert.match(report.secrets['m-users-grpc-tls']!.reason!, /DNS names/);
    assert.deepEqual(report.restarted, ['m-users']);
    assert.equal(api.value('m-gateway-grpc-tls', 'tls.crt'), before);
    const annotations = api.objects.get('deployments/m-users')!.spec!.template.metadata.annotations;
    assert.match(annotations['grpc-tls.mileage/certificate'] ?? '', /^[0-9a-f]{16}$/);

    const later = new Date(Date.now() + 61 * 86_400_000); // 29 days before the 90-day certificates expire
    const renewed = await ensureGrpcCertificates(client, wanted, { now: later });
    assert.equal(renewed.ca, 'unchanged');
    assert.ok(Object.values(renewed.secrets).every((s) => s.action === 'issued' && /expires in/.test(s.reason!)));
  });

  it('rotates the CA with overlap: prepare trusts both, activate signs with the new one, finish drops the old', async () => {
    await ensureGrpcCertificates(client, config()); // the names of the test before, back
    const oldCa = api.value('m-grpc-ca', 'tls.crt')!;
    const leaf = api.value('m-gateway-grpc-tls', 'tls.crt');
    await assert.rejects(ensureGrpcCertificates(client, config({ caRotation: 'activate' })), /no CA was prepared/);

    const prepared = await ensureGrpcCertificates(client, config({ caRotation: 'prepare' }));
    assert.equal(prepared.ca, 'prepared');
    assert.ok(Object.values(prepared.secrets).every((s) => s.action === 'trust updated'));
    assert.equal(api.value('m-gateway-grpc-tls', 'tls.crt'), leaf, 'still signed by the old CA');
    const both = certsIn(api.value('m-gateway-grpc-tls', 'ca.crt'));
    assert.equal(both.length, 2);
    assert.equal(both[0]!.fingerprint256, new X509Certificate(oldCa).fingerprint256);
    const writes = api.writes.length;
    assert.equal((await ensureGrpcCertificates(client, config({ caRotation: 'prepare' }))).ca, 'unchanged');
    assert.equal(api.writes.length, writes, 'prepare twice: nothing more');

    const activated = await ensureGrpcCertificates(client, config({ caRotation: 'activate' }));
    assert.equal(activated.ca, 'activated');
    assert.ok(Object.values(activated.secrets).every((s) => s.action === 'issued'));
    const newCa = new X509Certificate(api.value('m-grpc-ca', 'tls.crt')!);
    assert.equal(newCa.fingerprint256, both[1]!.fingerprint256, 'the prepared CA signs now');
    assert.ok(new X509Certificate(api.value('m-users-grpc-tls', 'tls.crt')!).verify(newCa.publicKey));
    assert.equal(certsIn(api.value('m-users-grpc-tls', 'ca.crt')).length, 2, 'the old CA still trusted');
    assert.equal((await ensureGrpcCertificates(client, config({ caRotation: 'activate' }))).ca, 'unchanged');
    await assert.rejects(ensureGrpcCertificates(client, config({ caRotation: 'prepare' })), /not finished/);

    const finished = await ensureGrpcCertificates(client, config({ caRotation: 'finish' }));
    assert.equal(finished.ca, 'finished');
    assert.ok(Object.values(finished.secrets).every((s) => s.action === 'trust updated'));
    const trust = certsIn(api.value('m-gateway-grpc-tls', 'ca.crt'));
    assert.deepEqual(
      trust.map((c) => c.fingerprint256),
      [newCa.fingerprint256],
    );
    assert.equal(api.value('m-grpc-ca', 'previous.crt'), undefined);
  });

  it('runs as the CLI with the API server, token and CA given by flags and the configuration by environment', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'issuer-'));
    try {
      writeFileSync(path.join(dir, 'token'), 'cli-token\n');
      api.tokens.length = 0;
      const code = await main(['--api-server', api.url, '--token-file', path.join(dir, 'token'), '--ca-rotation', ''], {
        GRPC_ISSUER_CONFIG: JSON.stringify(config()),
      });
      assert.equal(code, 0);
      assert.ok(api.tokens.length > 0 && api.tokens.every((t) => t === 'Bearer cli-token'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses an incomplete configuration', () => {
    assert.throws(() => parseIssuerConfig(JSON.stringify({ ...config(), certificates: [] })), /certificates/);
    assert.throws(() => parseIssuerConfig(JSON.stringify({ ...config(), caRotation: 'now' })), /caRotation/);
    assert.throws(() => parseIssuerConfig(JSON.stringify({ ...config(), renewBeforeDays: 90 })), /renewBeforeDays/);
  });
});
