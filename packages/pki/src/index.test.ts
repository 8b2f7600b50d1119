import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { after, describe, it } from 'node:test';
import { createAuthority, issueCertificate, writeDevelopmentPki } from './index';

const dir = mkdtempSync(path.join(tmpdir(), 'pki-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Whether a TLS client with `client` reaches a server with `server` that requires a client certificate of `ca`. */
async function handshake(
  server: { cert: string; key: string; ca: string },
  client: { cert: string; key: string; ca: string },
): Promise<{ ok: true; peerSan: string | undefined } | { ok: false; error: string }> {
  let peerSan: string | undefined;
  const listener = tls.createServer(
    { cert: server.cert, key: server.key, ca: server.ca, requestCert: true, rejectUnauthorized: true },
    (socket) => {
      peerSan = socket.getPeerX509Certificate()?.subjectAltName;
      socket.end('ok');
    },
  );
  listener.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as { port: number };
  try {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, cert: client.cert, key: client.key, ca: client.ca });
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString()));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    return answer === 'ok' ? { ok: true, peerSan } : { ok: false, error: 'closed without an answer' };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  } finally {
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  }
}

describe('issued certificates', () => {
  it('carry the SPIFFE id and the dialled names, are signed by the CA and match their keys', async () => {
    const ca = await createAuthority({ commonName: 'test CA', validDays: 1 });
    const leaf = await issueCertificate(ca, {
      commonName: 'mileage-users',
      spiffeId: 'spiffe://cluster.local/ns/mileage/sa/mileage-users',
      dnsNames: ['localhost', 'mileage-users'],
      ipAddresses: ['127.0.0.1'],
      validDays: 1,
    });
    const caCert = new X509Certificate(ca.cert);
    const cert = new X509Certificate(leaf.cert);
    assert.equal(caCert.ca, true);
    assert.equal(cert.ca, false);
    assert.ok(cert.checkIssued(caCert));
    assert.ok(cert.verify(caCert.publicKey));
    assert.ok(cert.checkPrivateKey(createPrivateKey(leaf.key)));
    assert.equal(
      cert.subjectAltName,
      'URI:spiffe://cluster.local/ns/mileage/sa/mileage-users, DNS:localhost, DNS:mileage-users, IP Address:127.0.0.1',
    );
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    assert.notEqual(cert.serialNumber, new X509Certificate((await issueCertificate(ca, leaf0())).cert).serialNumber);
  });

  it('authenticate both ends of a TLS handshake, and a certificate of another CA does not', async () => {
    const ca = await createAuthority({ commonName: 'test CA', validDays: 1 });
    const other = await createAuthority({ commonName: 'another CA', validDays: 1 });
    const server = { ...(await issueCertificate(ca, leaf0())), ca: ca.cert };
    const client = {
      ...(await issueCertificate(ca, { ...leaf0(), spiffeId: 'spiffe://cluster.local/ns/mileage/sa/mileage-gateway' })),
      ca: ca.cert,
    };
    const result = await handshake(server, client);
    assert.deepEqual(result, {
      ok: true,
      peerSan: 'URI:spiffe://cluster.local/ns/mileage/sa/mileage-gateway, IP Address:127.0.0.1',
    });
    const foreign = { ...(await issueCertificate(other, leaf0())), ca: ca.cert };
    assert.equal((await handshake(server, foreign)).ok, false);
  });

  it('expire after their validity', async () => {
    const ca = await createAuthority({ commonName: 'test CA', validDays: 1, now: new Date('2026-01-01T00:00:00Z') });
    const leaf = new X509Certificate(
      (await issueCertificate(ca, { ...leaf0(), validDays: 2, now: new Date('2026-01-01T00:00:00Z') })).cert,
    );
    assert.equal(new Date(leaf.validTo).toISOString(), '2026-01-03T00:00:00.000Z');
    assert.equal(new Date(leaf.validFrom).toISOString(), '2025-12-31T23:55:00.000Z');
  });
});

describe('writeDevelopmentPki', () => {
  it('writes a CA and one certificate per component, keys readable by their owner only', async () => {
    const pki = await writeDevelopmentPki(path.join(dir, 'dev'), {
      spiffePrefix: 'spiffe://mileage.local/ns/dev/sa/mileage-',
      components: ['gateway', 'users'],
      hosts: ['127.0.0.1', '127.0.0.2'],
    });
    assert.deepEqual(Object.keys(pki.files), ['gateway', 'users']);
    const users = new X509Certificate(readPem(pki.files.users!.certFile));
    assert.equal(
      users.subjectAltName,
      'URI:spiffe://mileage.local/ns/dev/sa/mileage-users, DNS:localhost, IP Address:127.0.0.1, IP Address:127.0.0.2',
    );
    assert.ok(users.checkIssued(new X509Certificate(readPem(pki.caFile))));
    assert.equal(statSync(pki.files.users!.keyFile).mode & 0o777, 0o600);
    assert.equal(statSync(path.join(pki.dir, 'ca.key')).mode & 0o777, 0o600);
  });
});

function leaf0() {
  return { commonName: 'leaf', ipAddresses: ['127.0.0.1'], validDays: 1 };
}

function readPem(file: string): string {
  return readFileSync(file, 'utf8');
}
