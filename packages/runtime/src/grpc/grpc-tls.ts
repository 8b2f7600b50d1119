import * as grpc from '@grpc/grpc-js';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { env } from '../config/config';
import { EndUserSigner, EndUserVerifier } from './end-user';
import { CallerIdentities, COMPONENTS, componentOf, spiffeIdOf, type Component } from './grpc-authz';

/**
 * Mutual TLS between the gateway and the services, and between services (required, all or nothing): a process's own
 * certificate and key, and the CA that signs every peer's certificate. With them, its gRPC server requires a client
 * certificate signed by that CA (a plaintext or certificate-less connection fails its handshake) and its clients
 * present their certificate and verify the server's against the CA and the address's host name. Each certificate
 * carries its component's SPIFFE id (grpc-authz.ts); a server then lets a caller call only the methods its component
 * may call (its .proto's `callers`: grpc/identity.ts).
 */
export const grpcTlsConfigShape = {
  /** PEM certificate (chain) of this process: server certificate of a service and client certificate of its calls. */
  GRPC_TLS_CERT_FILE: z.string().min(1).optional(),
  /** PEM private key of that certificate. */
  GRPC_TLS_KEY_FILE: z.string().min(1).optional(),
  /** PEM CA certificate(s) that sign the peers' certificates (servers and clients). */
  GRPC_TLS_CA_FILE: z.string().min(1).optional(),
  /**
   * Required with the three files: the SPIFFE id of every certificate up to its component's name, e.g.
   * `spiffe://cluster.local/ns/mileage/sa/mileage-` (then `…/sa/mileage-gateway` is the gateway).
   */
  GRPC_TLS_SPIFFE_PREFIX: z
    .string()
    .regex(/^spiffe:\/\/[^/\s,]+\/[^\s,]*$/, 'expected spiffe://<trust domain>/<path up to the component name>')
    .optional(),
  /**
   * The development switch: without the three files a process refuses to start unless this is true, and then its
   * hop is plaintext (any process that reaches a port may call any method), which it logs as an error at start.
   */
  GRPC_PLAINTEXT: env.boolean(false),
};

export interface GrpcTlsConfig {
  GRPC_PLAINTEXT?: boolean | undefined;
  GRPC_TLS_CERT_FILE?: string | undefined;
  GRPC_TLS_KEY_FILE?: string | undefined;
  GRPC_TLS_CA_FILE?: string | undefined;
  GRPC_TLS_SPIFFE_PREFIX?: string | undefined;
}

/** The three files of mutual TLS, all or none. */
export const GRPC_TLS_FILES = ['GRPC_TLS_CERT_FILE', 'GRPC_TLS_KEY_FILE', 'GRPC_TLS_CA_FILE'] as const;
const NAMES = GRPC_TLS_FILES;

interface Material {
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
  prefix: string;
  /** The component this process's own certificate names. */
  identity: Component;
}

/** Reads and checks the three files; a list of problems (variable, text) instead when they are not usable. */
function readMaterial(c: GrpcTlsConfig): Material | { problems: [string, string][] } {
  const set = NAMES.filter((n) => c[n] !== undefined);
  if (set.length === 0) return { problems: [] };
  if (set.length < NAMES.length) {
    return {
      problems: NAMES.filter((n) => c[n] === undefined).map((n) => [
        n,
        `required when ${set.join(', ')} ${set.length === 1 ? 'is' : 'are'} set (mutual TLS is all or nothing)`,
      ]),
    };
  }
  const problems: [string, string][] = [];
  const read = (name: (typeof NAMES)[number]) => {
    try {
      return readFileSync(c[name]!);
    } catch (err) {
      problems.push([name, `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`]);
      return undefined;
    }
  };
  const cert = read('GRPC_TLS_CERT_FILE');
  const key = read('GRPC_TLS_KEY_FILE');
  const ca = read('GRPC_TLS_CA_FILE');
  const prefix = c.GRPC_TLS_SPIFFE_PREFIX;
  if (prefix === undefined)
    problems.push(['GRPC_TLS_SPIFFE_PREFIX', "required with mutual TLS: how a peer's SPIFFE id names its component"]);
  if (!cert || !key || !ca || prefix === undefined) return { problems };
  let certificate: X509Certificate | undefined;
  try {
    certificate = new X509Certificate(cert);
  } catch {
    problems.push(['GRPC_TLS_CERT_FILE', 'is no PEM certificate']);
  }
  // Checked here, at start: a certificate without an identity would otherwise have every call it makes denied.
  const spiffeId = certificate && spiffeIdOf(certificate.subjectAltName);
  const identity = componentOf(spiffeId, prefix);
  if (certificate && !identity)
    problems.push([
      'GRPC_TLS_CERT_FILE',
      `carries ${spiffeId ? `the SPIFFE id ${spiffeId}` : 'no (single) SPIFFE id in its URI SANs'}, not ` +
        `GRPC_TLS_SPIFFE_PREFIX followed by a component (${COMPONENTS.join(', ')})`,
    ]);
  try {
    new X509Certificate(ca);
  } catch {
    problems.push(['GRPC_TLS_CA_FILE', 'is no PEM certificate']);
  }
  try {
    const privateKey = createPrivateKey(key);
    if (certificate && !certificate.checkPrivateKey(privateKey))
      problems.push(['GRPC_TLS_KEY_FILE', 'is not the key of the certificate in GRPC_TLS_CERT_FILE']);
  } catch {
    problems.push(['GRPC_TLS_KEY_FILE', 'is no PEM private key']);
  }
  return problems.length || !identity ? { problems } : { cert, key, ca, prefix, identity };
}

/**
 * zod refinement: the three variables together, naming readable, matching PEM files, and with them a SPIFFE prefix
 * under which this process's own certificate names a component; or none of them and GRPC_PLAINTEXT=true.
 */
export function checkGrpcTls(c: GrpcTlsConfig, ctx: z.RefinementCtx): void {
  const material = readMaterial(c);
  const problems = 'problems' in material ? material.problems : [];
  const configured = !('problems' in material) || problems.length > 0;
  if (!configured && !c.GRPC_PLAINTEXT)
    problems.push([
      'GRPC_TLS_CERT_FILE',
      'required: the gRPC hop is mutual TLS (GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE, GRPC_TLS_CA_FILE and ' +
        'GRPC_TLS_SPIFFE_PREFIX); for development only, GRPC_PLAINTEXT=true runs it in plaintext',
    ]);
  if (configured && c.GRPC_PLAINTEXT)
    problems.push(['GRPC_PLAINTEXT', 'contradicts the GRPC_TLS_* files: set one or the other']);
  for (const [name, message] of problems) ctx.addIssue({ code: 'custom', path: [name], message });
}

/** What a process says at start when its hop is plaintext (GRPC_PLAINTEXT): an error, so it cannot go unnoticed. */
export const PLAINTEXT_WARNING =
  'gRPC runs in PLAINTEXT (GRPC_PLAINTEXT=true): no mutual TLS, no caller identities, any process that reaches a ' +
  'port may call any method. For development on one machine only.';

export interface GrpcTls {
  /** True when the three files are configured. */
  enabled: boolean;
  /** The component this process's certificate names (when enabled). */
  identity?: Component;
  /** The identities of a server's callers (when enabled): what its per-method authorization checks. */
  callers?: CallerIdentities;
  /** The checker of the gateway's end-user contexts for this process's component (when enabled). */
  endUsers?: EndUserVerifier;
  /** The signer of end-user contexts with this process's key (when enabled: the gateway's use). */
  endUserSigner?: EndUserSigner;
  /** Credentials of this process's clients: mutual TLS when enabled, else plaintext. */
  channelCredentials(): grpc.ChannelCredentials;
  /** Credentials of this process's server: mutual TLS that requires client certificates when enabled, else plaintext. */
  serverCredentials(): grpc.ServerCredentials;
}

/** The credentials of a process's configuration (checked by checkGrpcTls first: a problem here throws). */
export function grpcTls(c: GrpcTlsConfig): GrpcTls {
  const material = readMaterial(c);
  if ('problems' in material) {
    if (material.problems.length === 0) {
      return {
        enabled: false,
        channelCredentials: () => grpc.credentials.createInsecure(),
        serverCredentials: () => grpc.ServerCredentials.createInsecure(),
      };
    }
    throw new Error(`gRPC TLS: ${material.problems.map(([n, m]) => `${n} ${m}`).join('; ')}`);
  }
  const { cert, key, ca, prefix, identity } = material;
  return {
    enabled: true,
    identity,
    callers: new CallerIdentities(prefix),
    endUsers: new EndUserVerifier(ca, prefix, identity),
    endUserSigner: new EndUserSigner(cert, key),
    channelCredentials: () => grpc.credentials.createSsl(ca, key, cert),
    serverCredentials: () => grpc.ServerCredentials.createSsl(ca, [{ private_key: key, cert_chain: cert }], true),
  };
}

/**
 * What a process reports of its hop at start: an error log when it is plaintext, and the gauge
 * `grpc_mutual_tls_enabled` (0 or 1) to alert on.
 */
export function reportGrpcTls(
  tls: GrpcTls,
  logger: { error(message: string): void },
  metrics: { gauge(config: { name: string; help: string }): { set(value: number): void } },
): void {
  metrics
    .gauge({ name: 'grpc_mutual_tls_enabled', help: '1 when the gRPC hop is mutual TLS, 0 when GRPC_PLAINTEXT is on.' })
    .set(tls.enabled ? 1 : 0);
  if (!tls.enabled) logger.error(PLAINTEXT_WARNING);
}

/** Throws when mutual TLS is on and this process's certificate names another component (a swapped Secret). */
export function checkOwnIdentity(tls: GrpcTls, component: string): void {
  if (tls.enabled && tls.identity !== component)
    throw new Error(`GRPC_TLS_CERT_FILE names the component ${tls.identity}, but this process is ${component}`);
}
