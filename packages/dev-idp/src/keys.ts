import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';

/** Signing keys kept across restarts: newest first (it signs); older ones stay published so issued tokens still verify. */
export interface KeyStore {
  keys: JWK[];
  cookieKeys: string[];
}

const KEEP_PREVIOUS = 2;

export function keyFilePath(dataDir: string): string {
  return path.join(dataDir, 'signing-keys.json');
}

function cookieKeysPath(dataDir: string): string {
  return path.join(dataDir, 'cookie-keys.json');
}

async function newSigningKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
  return { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

function writePrivate(file: string, value: unknown): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2), { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

export async function loadOrCreateKeys(dataDir: string): Promise<KeyStore> {
  const file = keyFilePath(dataDir);
  if (!existsSync(file)) writePrivate(file, { keys: [await newSigningKey()] });
  const cookieFile = cookieKeysPath(dataDir);
  if (!existsSync(cookieFile)) writePrivate(cookieFile, [randomBytes(32).toString('base64url')]);
  return {
    keys: (JSON.parse(readFileSync(file, 'utf8')) as { keys: JWK[] }).keys,
    cookieKeys: JSON.parse(readFileSync(cookieFile, 'utf8')) as string[],
  };
}

/** Adds a new signing key in front and keeps the previous ones (at most two). Restart the provider to use it. */
export async function rotateKeys(dataDir: string): Promise<{ signingKid: string; publishedKids: string[] }> {
  const { keys } = await loadOrCreateKeys(dataDir);
  const next = [await newSigningKey(), ...keys].slice(0, 1 + KEEP_PREVIOUS);
  writePrivate(keyFilePath(dataDir), { keys: next });
  return { signingKid: next[0]!.kid!, publishedKids: next.map((k) => k.kid!) };
}
