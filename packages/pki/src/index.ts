import * as x509 from '@peculiar/x509';
import { randomBytes, webcrypto } from 'node:crypto';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

/**
 * The certificates of the internal hop's mutual TLS, made in-process (no openssl CLI): a certificate authority, and
 * for each component a certificate for server and client use that carries its SPIFFE id (the identity the services
 * authorize callers by, packages/runtime/src/grpc/grpc-authz.ts) and the names its callers dial. EC P-256 keys, PEM.
 */
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;
// Backdated a little: a peer whose clock runs behind must not see a certificate from the future.
const BACKDATE_MS = 5 * 60_000;

export interface KeyAndCertificate {
  /** PEM certificate. */
  cert: string;
  /** PEM private key (PKCS #8). */
  key: string;
}

export interface AuthorityOptions {
  commonName: string;
  validDays: number;
  now?: Date;
}

// RFC 5280: a positive serial of at most 20 bytes, unpredictable (a CA's serials must not collide).
const serialNumber = () => {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString('hex');
};

const validity = (validDays: number, now = new Date()) => ({
  notBefore: new Date(now.getTime() - BACKDATE_MS),
  notAfter: new Date(now.getTime() + validDays * DAY_MS),
});

async function keyPair(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

/** A new certificate authority that signs certificates only (path length 0: no intermediate below it). */
export async function createAuthority(options: AuthorityOptions): Promise<KeyAndCertificate> {
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: [{ CN: [options.commonName] }],
    ...validity(options.validDays, options.now),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem'), key: await privateKeyPem(keys.privateKey) };
}

export interface LeafOptions {
  commonName: string;
  /** The one URI SAN a component's identity is read from (spiffe://…); none for a certificate without identity. */
  spiffeId?: string;
  /** Host names callers dial (DNS SANs). */
  dnsNames?: readonly string[];
  /** Addresses callers dial (IP SANs). */
  ipAddresses?: readonly string[];
  validDays: number;
  now?: Date;
}

async function importAuthority(authority: KeyAndCertificate) {
  const cert = new x509.X509Certificate(authority.cert);
  const der = x509.PemConverter.decodeFirst(authority.key);
  const key = await webcrypto.subtle.importKey('pkcs8', der, ALGORITHM, false, ['sign']);
  return { cert, key };
}

/** A certificate for server and client use, signed by `authority`. */
export async function issueCertificate(authority: KeyAndCertificate, options: LeafOptions): Promise<KeyAndCertificate> {
  const issuer = await importAuthority(authority);
  const keys = await keyPair();
  const names: x509.JsonGeneralName[] = [
    ...(options.spiffeId ? [{ type: 'url' as const, value: options.spiffeId }] : []),
    ...(options.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(options.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: [{ CN: [options.commonName] }],
    issuer: issuer.cert.subject,
    ...validity(options.validDays, options.now),
    publicKey: keys.publicKey,
    signingKey: issuer.key,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      ...(names.length ? [new x509.SubjectAlternativeNameExtension(names)] : []),
      await x509.AuthorityKeyIdentifierExtension.create(issuer.cert),
    ],
  });
  return { cert: cert.toString('pem'), key: await privateKeyPem(keys.privateKey) };
}

/** The GRPC_TLS_* files of one component. */
export interface ComponentFiles {
  certFile: string;
  keyFile: string;
  caFile: string;
}

/** Where writeDevelopmentPki puts a component's certificate and key, and the CA, in `dir`. */
export function componentFiles(dir: string, component: string): ComponentFiles {
  return {
    certFile: path.join(dir, `${component}.crt`),
    keyFile: path.join(dir, `${component}.key`),
    caFile: path.join(dir, 'ca.crt'),
  };
}

export interface DevelopmentPki {
  dir: string;
  caFile: string;
  /** The SPIFFE prefix every certificate's id starts with (GRPC_TLS_SPIFFE_PREFIX). */
  spiffePrefix: string;
  files: Record<string, ComponentFiles>;
}

export interface DevelopmentPkiOptions {
  /** GRPC_TLS_SPIFFE_PREFIX: a component's id is this followed by its name. */
  spiffePrefix: string;
  components: readonly string[];
  /** The loopback addresses the processes listen on (IP SANs of every certificate), and `localhost`. */
  hosts: readonly string[];
  validDays?: number;
}

/**
 * A fresh CA and one certificate per component in `dir` (the CA's key is written too, mode 0600, so that an operator
 * of the development stack can issue more): what `npm start`, the bench and the chaos suite run their hop with.
 */
export async function writeDevelopmentPki(dir: string, options: DevelopmentPkiOptions): Promise<DevelopmentPki> {
  const validDays = options.validDays ?? 30;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const write = (name: string, contents: string, mode: number) => {
    const file = path.join(dir, name);
    writeFileSync(file, contents, { mode });
    chmodSync(file, mode); // an existing file keeps its mode otherwise
  };
  const authority = await createAuthority({ commonName: 'mileage development CA', validDays });
  const caFile = componentFiles(dir, 'ca').caFile;
  write(path.basename(caFile), authority.cert, 0o644);
  write('ca.key', authority.key, 0o600);
  const ipAddresses = options.hosts.filter((h) => /^[\d.]+$|:/.test(h));
  const dnsNames = ['localhost', ...options.hosts.filter((h) => !ipAddresses.includes(h))];
  const files: Record<string, ComponentFiles> = {};
  for (const component of options.components) {
    const issued = await issueCertificate(authority, {
      commonName: `mileage-${component}`,
      spiffeId: `${options.spiffePrefix}${component}`,
      dnsNames,
      ipAddresses,
      validDays,
    });
    files[component] = componentFiles(dir, component);
    write(path.basename(files[component].certFile), issued.cert, 0o644);
    write(path.basename(files[component].keyFile), issued.key, 0o600);
  }
  return { dir, caFile, spiffePrefix: options.spiffePrefix, files };
}
