import { createPrivateKey, sign, verify, X509Certificate, type KeyObject } from 'node:crypto';
import { componentOf, spiffeIdOf, type Component } from './grpc-authz';

/**
 * The end user a call acts for, as the gateway verified them: signed by the gateway with its own mutual-TLS key, so
 * that Users, Groups and Drives act on a `userId` or record an audit actor only when the gateway vouched for it — a
 * pod that may call a method (its certificate allows it) still cannot pick whom it acts for. A service checks the
 * signature against the certificate sent beside it, and that certificate against the CA it already trusts and the
 * gateway's SPIFFE id; no other key exists to distribute or rotate (the certificate's rotation is the key's).
 *
 * A context is audience-bound (the services a request of its kind reaches, e.g. SCIM's: scim, users, groups) and
 * short-lived (END_USER_CONTEXT_TTL_SECONDS): the gateway signs one per caller, organization and audience and reuses
 * it for that long, so that neither side pays an ECDSA operation per request (a service remembers what it verified).
 * It is not bound to one request: a captured context acts as its user, inside its organization, on the methods the
 * capturer's own certificate may call, until it expires (docs/operations.md, threat model).
 */
export interface EndUser {
  /** The platform user (a /v1 caller); absent for a provisioning client. */
  sub?: string;
  /** The OAuth client: a SCIM request's provisioning client is the audit actor its writes record. */
  client?: string;
  /** The organization the caller acts inside. */
  org: number;
  scopes: string[];
  /** The components that may act on it. */
  aud: Component[];
  /** Issued and expires, unix seconds. */
  iat: number;
  exp: number;
}

export const END_USER_METADATA_KEY = 'x-mileage-end-user';
/** The signer's certificate (base64 DER): the same bytes on every call, which HPACK sends once per connection. */
export const END_USER_CERT_METADATA_KEY = 'x-mileage-end-user-cert';
export const END_USER_CONTEXT_TTL_SECONDS = 60;
/**
 * How long past its `exp` a service still takes a context: the gateway's and a service's clocks differ (NTP keeps
 * them within a second or two), and a context may be signed by the gateway's clock and checked by a service's that
 * runs ahead. Small, as a captured context acts as its user until then.
 */
export const END_USER_EXPIRY_SKEW_SECONDS = 5;
/**
 * The gateway signs a context anew this long before its `exp`, well beyond END_USER_EXPIRY_SKEW_SECONDS: one in use
 * meets no service that counts it expired unless that service's clock runs more than margin + skew ahead.
 */
export const END_USER_RESIGN_MARGIN_SECONDS = 15;
/** Clock skew tolerated between the gateway and a service on when a context or certificate begins. */
const SKEW_SECONDS = 30;

/** What travels with a call: the signed context and its signer's certificate. */
export interface SignedEndUser {
  token: string;
  cert: string;
}

/** The gateway's side: signs a context per caller, organization and audience, and reuses it while it is fresh. */
export class EndUserSigner {
  private readonly key: KeyObject;
  private readonly cert: string;
  private readonly cache = new Map<string, { signed: SignedEndUser; resignAt: number }>();

  constructor(
    certPem: string | Buffer,
    keyPem: string | Buffer,
    private readonly now: () => number = Date.now,
  ) {
    this.key = createPrivateKey(keyPem);
    this.cert = new X509Certificate(certPem).raw.toString('base64');
  }

  sign(user: Omit<EndUser, 'iat' | 'exp'>): SignedEndUser {
    const seconds = Math.floor(this.now() / 1000);
    const cacheKey = JSON.stringify([user.sub, user.client, user.org, [...user.scopes].sort(), user.aud]);
    const cached = this.cache.get(cacheKey);
    if (cached && seconds < cached.resignAt) return cached.signed;
    const payload = { ...user, iat: seconds, exp: seconds + END_USER_CONTEXT_TTL_SECONDS };
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    const signature = sign('sha256', Buffer.from(`v1.${body}`), { key: this.key, dsaEncoding: 'ieee-p1363' });
    const signed = { token: `v1.${body}.${signature.toString('base64url')}`, cert: this.cert };
    // Bounded: a caller key per user and organization; past it the oldest signatures are made again.
    if (this.cache.size >= 10_000) this.cache.clear();
    this.cache.set(cacheKey, { signed, resignAt: payload.exp - END_USER_RESIGN_MARGIN_SECONDS });
    return signed;
  }
}

export type EndUserCheck = { ok: true; user: EndUser } | { ok: false; reason: string };

/** A service's side: checks a context for `component` against the CA bundle of its mutual TLS. */
export class EndUserVerifier {
  private readonly authorities: X509Certificate[];
  private readonly signers = new Map<string, { key: KeyObject; notAfter: number } | { error: string }>();
  private readonly verified = new Map<string, EndUser>();

  constructor(
    caPem: string | Buffer,
    private readonly spiffePrefix: string,
    private readonly component: Component,
    private readonly now: () => number = Date.now,
  ) {
    this.authorities = splitPem(caPem.toString()).map((pem) => new X509Certificate(pem));
  }

  check(token: string | undefined, cert: string | undefined): EndUserCheck {
    if (!token || !cert) return { ok: false, reason: 'no end-user context' };
    const seconds = this.now() / 1000;
    let user = this.verified.get(token);
    if (!user) {
      const signer = this.signer(cert);
      if ('error' in signer) return { ok: false, reason: signer.error };
      if (this.now() > signer.notAfter) return { ok: false, reason: "the signer's certificate has expired" };
      const match = /^v1\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{86})$/.exec(token);
      if (!match) return { ok: false, reason: 'malformed end-user context' };
      const signature = Buffer.from(match[2]!, 'base64url');
      const signedPart = Buffer.from(`v1.${match[1]}`);
      if (!verify('sha256', signedPart, { key: signer.key, dsaEncoding: 'ieee-p1363' }, signature))
        return { ok: false, reason: 'the end-user context is not signed by the gateway' };
      try {
        user = JSON.parse(Buffer.from(match[1]!, 'base64url').toString()) as EndUser;
      } catch {
        return { ok: false, reason: 'malformed end-user context' };
      }
      if (seconds > user.exp + END_USER_EXPIRY_SKEW_SECONDS)
        return { ok: false, reason: 'the end-user context has expired' };
      // Remembered until it expires; bounded, as a flood of distinct contexts would need the gateway's key.
      if (this.verified.size >= 10_000) this.verified.clear();
      this.verified.set(token, user);
    }
    if (seconds > user.exp + END_USER_EXPIRY_SKEW_SECONDS || user.iat > seconds + SKEW_SECONDS)
      return { ok: false, reason: 'the end-user context is outside its lifetime' };
    if (!user.aud.includes(this.component))
      return { ok: false, reason: `the end-user context is not for ${this.component}` };
    return { ok: true, user };
  }

  /** The signer's public key, once its certificate is known to be the gateway's under one of the CAs. */
  private signer(cert: string): { key: KeyObject; notAfter: number } | { error: string } {
    let known = this.signers.get(cert);
    if (!known) {
      known = this.judge(cert);
      if (this.signers.size >= 64) this.signers.clear();
      this.signers.set(cert, known);
    }
    return known;
  }

  private judge(cert: string): { key: KeyObject; notAfter: number } | { error: string } {
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(Buffer.from(cert, 'base64'));
    } catch {
      return { error: "the signer's certificate is malformed" };
    }
    if (!this.authorities.some((ca) => certificate.checkIssued(ca) && certificate.verify(ca.publicKey)))
      return { error: "the signer's certificate is not of the trusted CA" };
    if (componentOf(spiffeIdOf(certificate.subjectAltName), this.spiffePrefix) !== 'gateway')
      return { error: "the signer's certificate is not the gateway's" };
    if (Date.parse(certificate.validFrom) > this.now() + SKEW_SECONDS * 1000)
      return { error: "the signer's certificate is not yet valid" };
    return { key: certificate.publicKey, notAfter: Date.parse(certificate.validTo) };
  }
}

function splitPem(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/** Where the /v1 routes' calls go, and a SCIM request's: the audiences the gateway signs for. */
export const V1_AUDIENCE: readonly Component[] = ['users', 'groups', 'drives', 'webhooks'];
export const SCIM_AUDIENCE: readonly Component[] = ['scim', 'users', 'groups'];

/** The end-user context a call came with, to forward on the calls it makes for the same end user (SCIM's). */
export function receivedEndUser(metadata: { get(key: string): unknown[] }): SignedEndUser | undefined {
  const [token] = metadata.get(END_USER_METADATA_KEY);
  const [cert] = metadata.get(END_USER_CERT_METADATA_KEY);
  return typeof token === 'string' && typeof cert === 'string' ? { token, cert } : undefined;
}

/**
 * The ErrorInfo reasons of a call the hop refused for who made it (its certificate's component, its end-user
 * context): the gateway's own calls meeting one is a fault of the installation, not of the client (a 500 that says
 * nothing of it; the gateway logs the call's message).
 */
export const HOP_REFUSALS: ReadonlySet<string> = new Set(['CALLER_NOT_ALLOWED', 'END_USER_NOT_VOUCHED']);
