import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import { createAuthority, issueCertificate, type KeyAndCertificate } from './index';

/**
 * The chart-managed certificates of the internal hop (deploy/helm/mileage, grpcTls without cert-manager or your own
 * Secrets): a CA kept in a Secret of its own, and per component a kubernetes.io/tls Secret (tls.crt, tls.key, ca.crt)
 * with its SPIFFE id and the DNS names its callers dial, made or renewed only when needed. It talks to the API server
 * with plain node:https, as the hook Job's ServiceAccount (a Role limited to the named Secrets and Deployments).
 */

const DAY_MS = 86_400_000;
/** Annotations and labels the issuer puts on what it writes. */
export const ANNOTATION_PREFIX = 'grpc-tls.mileage';
export const MANAGED_BY = 'mileage-grpc-issuer';
const NOTE =
  'Written by the chart-managed gRPC certificate issuer (a Helm hook Job), not by Helm: helm uninstall leaves it ' +
  '(docs/operations-helm.md).';

export interface KubeConnection {
  /** https://host:port (http:// for a test server). */
  server: string;
  token: string;
  /** PEM of the CA that signs the API server's certificate; none: the system's. */
  ca?: string | undefined;
}

export interface KubeResponse {
  status: number;
  body: unknown;
}

export class KubeApiError extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    const message = (body as { message?: string } | undefined)?.message ?? JSON.stringify(body);
    super(`${method} ${path}: ${status} ${message}`);
  }
}

/** A minimal JSON client of the Kubernetes API (one request per call, no keep-alive: a Job makes a few dozen). */
export class KubeClient {
  constructor(private readonly connection: KubeConnection) {}

  request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<KubeResponse> {
    const url = new URL(path, this.connection.server);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const options: https.RequestOptions = {
      method,
      headers: {
        authorization: `Bearer ${this.connection.token}`,
        accept: 'application/json',
        ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}),
      },
      ...(this.connection.ca ? { ca: this.connection.ca } : {}),
      timeout: 30_000,
    };
    const transport = url.protocol === 'http:' ? http : https;
    return new Promise((resolve, reject) => {
      const req = transport.request(url, options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON: kept as text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** The object, or undefined when it does not exist (404); any other failure throws. */
  async get<T>(path: string): Promise<T | undefined> {
    const res = await this.request('GET', path);
    if (res.status === 404) return undefined;
    if (res.status >= 300) throw new KubeApiError('GET', path, res.status, res.body);
    return res.body as T;
  }

  async send<T>(method: string, path: string, body: unknown, contentType?: string): Promise<T> {
    const res = await this.request(method, path, body, contentType);
    if (res.status >= 300) throw new KubeApiError(method, path, res.status, res.body);
    return res.body as T;
  }
}

interface ObjectMeta {
  name: string;
  namespace?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface Secret {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta;
  type?: string;
  data?: Record<string, string>;
}

const decode = (secret: Secret | undefined, key: string) =>
  secret?.data?.[key] === undefined ? undefined : Buffer.from(secret.data[key], 'base64').toString('utf8');
const encode = (values: Record<string, string | undefined>) =>
  Object.fromEntries(
    Object.entries(values)
      .filter((entry): entry is [string, string] => entry[1] !== undefined)
      .map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]),
  );

/** One component's certificate, as the chart wants it. */
export interface CertificateSpec {
  component: string;
  /** The kubernetes.io/tls Secret the component's pods mount. */
  secret: string;
  /** The one URI SAN. */
  spiffeId: string;
  /** The names its callers dial (DNS SANs). */
  dnsNames: string[];
  /** The Deployment whose pods mount the Secret: restarted when the Secret changes (if it exists). */
  deployment?: string | undefined;
}

/**
 * CA rotation with overlap, one step per run (one Helm upgrade each, the pods rolled in between):
 * "" keeps the CA as it is (and creates it when missing); "prepare" makes the next CA, trusted beside the current one
 * (ca.crt holds both) but not signing yet; "activate" makes the prepared CA the signing one, keeps the previous one
 * trusted, and reissues every certificate; "finish" drops every CA but the signing one from ca.crt.
 */
export type CaRotation = '' | 'prepare' | 'activate' | 'finish';
export const CA_ROTATIONS: readonly CaRotation[] = ['', 'prepare', 'activate', 'finish'];

export interface IssuerConfig {
  namespace: string;
  /** The Secret that keeps the CA (Opaque: tls.crt, tls.key, ca.crt; next.crt, next.key and previous.crt while it
   * rotates). */
  caSecret: string;
  /** The Helm release (app.kubernetes.io/instance of what it writes). */
  release: string;
  certificates: CertificateSpec[];
  /** Lifetime of a component certificate (capped at the CA's). */
  validDays: number;
  /** A certificate expiring within this many days is renewed. */
  renewBeforeDays: number;
  /** Lifetime of a new CA. */
  caValidDays: number;
  caRotation: CaRotation;
}

export type SecretAction = 'created' | 'issued' | 'trust updated' | 'unchanged';

export interface IssuerReport {
  ca: 'created' | 'unchanged' | 'prepared' | 'activated' | 'finished';
  secrets: Record<string, { action: SecretAction; reason?: string }>;
  /** Deployments whose pod template was annotated (and so rolled) because their Secret changed. */
  restarted: string[];
  warnings: string[];
}

export interface IssuerOptions {
  now?: Date;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

const pemBlocks = (bundle: string | undefined) =>
  (bundle ?? '').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
const bundleOf = (...pems: (string | undefined)[]) =>
  pems
    .flatMap((p) => pemBlocks(p))
    .map((p) => `${p}\n`)
    .join('');

/** Days from now until a certificate's notAfter. */
const daysLeft = (cert: X509Certificate, now: Date) => (new Date(cert.validTo).getTime() - now.getTime()) / DAY_MS;

/** The SANs of a certificate: its URIs, DNS names and anything else. */
export function subjectAltNames(cert: X509Certificate) {
  const uris: string[] = [];
  const dns: string[] = [];
  const other: string[] = [];
  for (const entry of (cert.subjectAltName ?? '').split(/,\s*/).filter(Boolean)) {
    if (entry.startsWith('URI:')) uris.push(entry.slice(4));
    else if (entry.startsWith('DNS:')) dns.push(entry.slice(4));
    else other.push(entry);
  }
  return { uris, dns, other };
}

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().every((v, i) => v === [...b].sort()[i]);

/** Why a component's Secret needs a new certificate, or undefined when the one it holds is right. */
export function renewalReason(
  secret: Secret,
  spec: CertificateSpec,
  signing: X509Certificate,
  renewBeforeDays: number,
  now: Date,
): string | undefined {
  const certPem = decode(secret, 'tls.crt');
  const keyPem = decode(secret, 'tls.key');
  if (!certPem || !keyPem) return 'no tls.crt or tls.key';
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) return 'tls.key is not the key of tls.crt';
  } catch (err) {
    return `unreadable (${(err as Error).message})`;
  }
  if (!cert.checkIssued(signing) || !cert.verify(signing.publicKey)) return 'not signed by the signing CA';
  const left = daysLeft(cert, now);
  if (left < renewBeforeDays) return `expires in ${Math.max(0, left).toFixed(1)} days (renewal ${renewBeforeDays})`;
  const sans = subjectAltNames(cert);
  if (!sameSet(sans.uris, [spec.spiffeId]))
    return `SPIFFE id ${sans.uris.join(' ') || 'none'}, wanted ${spec.spiffeId}`;
  if (!sameSet(sans.dns, spec.dnsNames) || sans.other.length) return 'DNS names differ from the wanted ones';
  return undefined;
}

const labelsOf = (config: IssuerConfig, component?: string) => ({
  'app.kubernetes.io/part-of': 'mileage',
  'app.kubernetes.io/instance': config.release,
  'app.kubernetes.io/managed-by': MANAGED_BY,
  ...(component ? { 'app.kubernetes.io/name': `mileage-${component}`, 'app.kubernetes.io/component': component } : {}),
});

/** A short digest of a Secret's certificate and trust: the pod template annotation that restarts its pods. */
export const secretDigest = (tlsCrt: string, caCrt: string) =>
  createHash('sha256').update(tlsCrt).update('\0').update(caCrt).digest('hex').slice(0, 16);

interface CaState {
  signing: KeyAndCertificate;
  next?: KeyAndCertificate | undefined;
  previous?: string | undefined;
}

const caBundle = (state: CaState) => bundleOf(state.signing.cert, state.next?.cert, state.previous);

/**
 * Brings the CA Secret and every component's Secret to what `config` wants, touching only what must change: a second
 * run with the same config writes nothing. Restarts (annotates the pod template of) each existing Deployment whose
 * Secret it changed.
 */
export async function ensureGrpcCertificates(
  client: KubeClient,
  config: IssuerConfig,
  options: IssuerOptions = {},
): Promise<IssuerReport> {
  const now = options.now ?? new Date();
  const log = options.log ?? (() => {});
  const ns = encodeURIComponent(config.namespace);
  const secretsPath = `/api/v1/namespaces/${ns}/secrets`;
  const report: IssuerReport = { ca: 'unchanged', secrets: {}, restarted: [], warnings: [] };
  const warn = (message: string) => {
    report.warnings.push(message);
    log(message, { level: 'warn' });
  };

  // --- the CA
  const newCa = () =>
    createAuthority({
      commonName: `${config.release} gRPC CA ${now.toISOString().slice(0, 10)}`,
      validDays: config.caValidDays,
      now,
    });
  const caPath = `${secretsPath}/${encodeURIComponent(config.caSecret)}`;
  const existing = await client.get<Secret>(caPath);
  let state: CaState;
  if (!existing) {
    if (config.caRotation === 'activate')
      throw new Error(`caRotation activate: no CA Secret ${config.caSecret} exists yet, so none was prepared`);
    state = { signing: await newCa() };
    report.ca = 'created';
  } else {
    const cert = decode(existing, 'tls.crt');
    const key = decode(existing, 'tls.key');
    if (!cert || !key) throw new Error(`Secret ${config.caSecret} lacks tls.crt or tls.key: not a CA this issuer made`);
    const nextCert = decode(existing, 'next.crt');
    const nextKey = decode(existing, 'next.key');
    state = {
      signing: { cert, key },
      next: nextCert && nextKey ? { cert: nextCert, key: nextKey } : undefined,
      previous: decode(existing, 'previous.crt') || undefined,
    };
    switch (config.caRotation) {
      case 'prepare':
        if (state.previous)
          throw new Error(
            'caRotation prepare: the previous rotation is not finished (its old CA is still trusted): finish it first',
          );
        if (!state.next) {
          state.next = await newCa();
          report.ca = 'prepared';
        }
        break;
      case 'activate':
        if (state.next) {
          state = { signing: state.next, previous: state.signing.cert };
          report.ca = 'activated';
        } else if (!state.previous) {
          throw new Error('caRotation activate: no CA was prepared (run with caRotation prepare first)');
        }
        break;
      case 'finish':
        if (state.next || state.previous) {
          state = { signing: state.signing };
          report.ca = 'finished';
        }
        break;
      case '':
        break;
    }
  }
  const signing = new X509Certificate(state.signing.cert);
  const caLeft = daysLeft(signing, now);
  if (caLeft < config.validDays)
    warn(`the signing CA expires in ${caLeft.toFixed(0)} days: rotate it (grpcTls.chartManaged.caRotation)`);
  const trust = caBundle(state);
  if (report.ca !== 'unchanged' || decode(existing, 'ca.crt') !== trust) {
    const secret: Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: config.caSecret,
        namespace: config.namespace,
        labels: { ...labelsOf(config), 'app.kubernetes.io/component': 'grpc-ca' },
        annotations: {
          [`${ANNOTATION_PREFIX}/note`]: NOTE,
          [`${ANNOTATION_PREFIX}/not-after`]: new Date(signing.validTo).toISOString(),
        },
        ...(existing?.metadata.resourceVersion ? { resourceVersion: existing.metadata.resourceVersion } : {}),
      },
      type: 'Opaque',
      data: encode({
        'tls.crt': state.signing.cert,
        'tls.key': state.signing.key,
        'ca.crt': trust,
        'next.crt': state.next?.cert,
        'next.key': state.next?.key,
        'previous.crt': state.previous,
      }),
    };
    if (existing) await client.send('PUT', caPath, secret);
    else await client.send('POST', secretsPath, secret);
    log(`CA Secret ${config.caSecret}: ${report.ca === 'unchanged' ? 'trust updated' : report.ca}`, {
      ca: report.ca,
      notAfter: signing.validTo,
    });
  }

  // --- every component's Secret
  const leafDays = Math.max(1, Math.min(config.validDays, Math.floor(caLeft)));
  for (const spec of config.certificates) {
    const path = `${secretsPath}/${encodeURIComponent(spec.secret)}`;
    const current = await client.get<Secret>(path);
    if (current && current.type !== 'kubernetes.io/tls')
      throw new Error(`Secret ${spec.secret} exists with type ${current.type}, not kubernetes.io/tls: delete it first`);
    let reason = current ? renewalReason(current, spec, signing, config.renewBeforeDays, now) : 'missing';
    let tlsCrt = decode(current, 'tls.crt') ?? '';
    let tlsKey = decode(current, 'tls.key') ?? '';
    let action: SecretAction = 'unchanged';
    if (reason) {
      const issued = await issueCertificate(state.signing, {
        commonName: spec.secret.length <= 64 ? spec.secret : spec.component,
        spiffeId: spec.spiffeId,
        dnsNames: spec.dnsNames,
        validDays: leafDays,
        now,
      });
      tlsCrt = issued.cert;
      tlsKey = issued.key;
      action = current ? 'issued' : 'created';
    } else if (decode(current, 'ca.crt') !== trust) {
      action = 'trust updated';
      reason = 'ca.crt is not the current trust bundle';
    }
    report.secrets[spec.secret] = { action, ...(reason ? { reason } : {}) };
    if (action === 'unchanged') continue;
    if (current && current.metadata.labels?.['app.kubernetes.io/managed-by'] !== MANAGED_BY)
      warn(`Secret ${spec.secret} was not made by this issuer: replacing its certificate (${reason})`);
    const cert = new X509Certificate(tlsCrt);
    const secret: Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: spec.secret,
        namespace: config.namespace,
        labels: labelsOf(config, spec.component),
        annotations: {
          [`${ANNOTATION_PREFIX}/note`]: NOTE,
          [`${ANNOTATION_PREFIX}/spiffe-id`]: spec.spiffeId,
          [`${ANNOTATION_PREFIX}/not-after`]: new Date(cert.validTo).toISOString(),
          [`${ANNOTATION_PREFIX}/issuer`]: signing.subject.replace(/\n/g, ', '),
        },
        ...(current?.metadata.resourceVersion ? { resourceVersion: current.metadata.resourceVersion } : {}),
      },
      type: 'kubernetes.io/tls',
      data: encode({ 'tls.crt': tlsCrt, 'tls.key': tlsKey, 'ca.crt': trust }),
    };
    if (current) await client.send('PUT', path, secret);
    else await client.send('POST', secretsPath, secret);
    log(`Secret ${spec.secret}: ${action}`, { reason, spiffeId: spec.spiffeId, notAfter: cert.validTo });

    // Its pods read the files at start: roll them (a Deployment that does not exist yet starts with these files).
    if (spec.deployment) {
      const deploymentPath = `/apis/apps/v1/namespaces/${ns}/deployments/${encodeURIComponent(spec.deployment)}`;
      const deployment = await client.get<{ metadata: ObjectMeta }>(deploymentPath);
      if (deployment) {
        const patch = {
          spec: {
            template: {
              metadata: { annotations: { [`${ANNOTATION_PREFIX}/certificate`]: secretDigest(tlsCrt, trust) } },
            },
          },
        };
        await client.send('PATCH', deploymentPath, patch, 'application/merge-patch+json');
        report.restarted.push(spec.deployment);
        log(`Deployment ${spec.deployment}: restarted for its new certificate`);
      }
    }
  }
  return report;
}

/** Reads and checks an IssuerConfig (the JSON the chart renders into the Job's GRPC_ISSUER_CONFIG). */
export function parseIssuerConfig(text: string): IssuerConfig {
  const raw = JSON.parse(text) as Partial<IssuerConfig>;
  const problems: string[] = [];
  const str = (v: unknown) => typeof v === 'string' && v.length > 0;
  const num = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v > 0;
  if (!str(raw.namespace)) problems.push('namespace');
  if (!str(raw.caSecret)) problems.push('caSecret');
  if (!str(raw.release)) problems.push('release');
  if (!num(raw.validDays)) problems.push('validDays');
  if (!(typeof raw.renewBeforeDays === 'number' && raw.renewBeforeDays >= 0)) problems.push('renewBeforeDays');
  if (!num(raw.caValidDays)) problems.push('caValidDays');
  const rotation = raw.caRotation ?? '';
  if (!CA_ROTATIONS.includes(rotation)) problems.push(`caRotation (one of ${CA_ROTATIONS.map((r) => `"${r}"`)})`);
  if (!Array.isArray(raw.certificates) || raw.certificates.length === 0) problems.push('certificates');
  for (const [i, c] of (raw.certificates ?? []).entries()) {
    if (!str(c.component) || !str(c.secret) || !str(c.spiffeId) || !c.spiffeId.startsWith('spiffe://'))
      problems.push(`certificates[${i}]`);
    if (!Array.isArray(c.dnsNames) || !c.dnsNames.every(str)) problems.push(`certificates[${i}].dnsNames`);
  }
  if (num(raw.validDays) && typeof raw.renewBeforeDays === 'number' && raw.renewBeforeDays >= raw.validDays!)
    problems.push('renewBeforeDays (must be shorter than validDays)');
  if (problems.length) throw new Error(`issuer configuration: missing or invalid ${problems.join(', ')}`);
  return { ...(raw as IssuerConfig), caRotation: rotation };
}
