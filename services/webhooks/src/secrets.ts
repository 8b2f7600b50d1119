import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new Standard Webhooks signing secret: `whsec_` and 32 random bytes in base64. */
export function newSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

/** The HMAC key of a `whsec_` secret. */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** Standard Webhooks `webhook-signature`: `v1,` and the base64 HMAC-SHA256 of "id.timestamp.body". */
export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/**
 * Signing secrets at rest: AES-256-GCM under a key derived (SHA-256) from WEBHOOKS_SECRET_KEY, stored as
 * `enc:v1:<key id>:<iv>:<tag>:<ciphertext>` (base64). Without a key they are stored as `plain:<secret>` (development
 * mode only). The key id (the first 8 hex digits of the key's own SHA-256) names the key a value needs.
 */
export class SecretBox {
  private readonly key: Buffer | undefined;
  private readonly keyId: string | undefined;

  constructor(passphrase: string | undefined) {
    if (passphrase) {
      this.key = createHash('sha256').update(passphrase).digest();
      this.keyId = createHash('sha256').update(this.key).digest('hex').slice(0, 8);
    }
  }

  get encrypting(): boolean {
    return this.key !== undefined;
  }

  seal(secret: string): string {
    if (!this.key) return `plain:${secret}`;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    const b64 = (b: Buffer) => b.toString('base64');
    return `enc:v1:${this.keyId}:${b64(iv)}:${b64(cipher.getAuthTag())}:${b64(ciphertext)}`;
  }

  open(stored: string): string {
    if (stored.startsWith('plain:')) return stored.slice('plain:'.length);
    const parts = stored.split(':');
    if (parts.length !== 6 || parts[0] !== 'enc' || parts[1] !== 'v1') throw new Error('unreadable stored secret');
    if (!this.key) throw new Error('a stored secret is encrypted but WEBHOOKS_SECRET_KEY is not set');
    if (parts[2] !== this.keyId) throw new Error(`a stored secret is encrypted with another key (${parts[2]})`);
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(parts[3]!, 'base64'));
    decipher.setAuthTag(Buffer.from(parts[4]!, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(parts[5]!, 'base64')), decipher.final()]).toString('utf8');
  }
}
