import * as grpc from '@grpc/grpc-js';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * Mutual TLS between the gateway and the services, and between services (optional, all or nothing): a process's own
 * certificate and key, and the CA that signs every peer's certificate. With them, its gRPC server requires a client
 * certificate signed by that CA (a plaintext or certificate-less connection fails its handshake) and its clients
 * present their certificate and verify the server's against the CA and the address's host name.
 */
export const grpcTlsConfigShape = {
  /** PEM certificate (chain) of this process: server certificate of a service and client certificate of its calls. */
  GRPC_TLS_CERT_FILE: z.string().min(1).optional(),
  /** PEM private key of that certificate. */
  GRPC_TLS_KEY_FILE: z.string().min(1).optional(),
  /** PEM CA certificate(s) that sign the peers' certificates (servers and clients). */
  GRPC_TLS_CA_FILE: z.string().min(1).optional(),
};

export interface GrpcTlsConfig {
  GRPC_TLS_CERT_FILE?: string | undefined;
  GRPC_TLS_KEY_FILE?: string | undefined;
  GRPC_TLS_CA_FILE?: string | undefined;
}

const NAMES = ['GRPC_TLS_CERT_FILE', 'GRPC_TLS_KEY_FILE', 'GRPC_TLS_CA_FILE'] as const;

interface Material {
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
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
  if (!cert || !key || !ca) return { problems };
  let certificate: X509Certificate | undefined;
  try {
    certificate = new X509Certificate(cert);
  } catch {
    problems.push(['GRPC_TLS_CERT_FILE', 'is no PEM certificate']);
  }
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
  return problems.length ? { problems } : { cert, key, ca };
}

/** zod refinement: the three variables together or none, naming readable, matching PEM files. */
export function checkGrpcTls(c: GrpcTlsConfig, ctx: z.RefinementCtx): void {
  const material = readMaterial(c);
  if ('problems' in material)
    for (const [name, message] of material.problems) ctx.addIssue({ code: 'custom', path: [name], message });
}

export interface GrpcTls {
  /** True when the three files are configured. */
  enabled: boolean;
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
  const { cert, key, ca } = material;
  return {
    enabled: true,
    channelCredentials: () => grpc.credentials.createSsl(ca, key, cert),
    serverCredentials: () => grpc.ServerCredentials.createSsl(ca, [{ private_key: key, cert_chain: cert }], true),
  };
}
