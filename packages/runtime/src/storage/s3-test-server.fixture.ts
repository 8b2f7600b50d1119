// A real S3-compatible server for the tests of the archive store's S3 path: SeaweedFS (`weed server -s3`: master,
// volume server, filer and S3 gateway in one process), built from the Go module proxy by tools/s3-test-server/build.sh.
// Everything listens on 127.0.0.1 only, keeps its data in a temporary folder, and requires signed requests.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { freePort } from '../config/net';
import type { S3StoreOptions } from './s3-archive-store';

export interface S3TestServer {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  bucket: string;
  /**
   * An S3ArchiveStore's options on the bucket, signed as an identity that may only read, write and list that bucket
   * (what the chart's credentials are given in production).
   */
  storeOptions: Required<Omit<S3StoreOptions, 'idleTimeoutMs'>>;
  /** Stops the server (SIGKILL, its exit awaited) and deletes its data. */
  stop(): Promise<void>;
}

const BUILD = path.join(__dirname, '..', '..', '..', '..', 'tools', 's3-test-server', 'build.sh');
const REGION = 'us-east-1';
/** A cold machine's first start: a master election, then the filer and the gateway that wait for it. */
const READY_TIMEOUT_MS = 60_000;
/** What is kept of the server's output, for the error when it does not start or stop. */
const LOG_TAIL_BYTES = 16 * 1024;

/** The server's binary: built on first use (minutes on a cold machine), then cached by build.sh. */
export function s3TestServerBinary(): string {
  return execFileSync('bash', [BUILD], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** Starts SeaweedFS with `bucket` created, and resolves once it stores objects. */
export async function startS3TestServer(bucket = 'mileage-exports'): Promise<S3TestServer> {
  const binary = s3TestServerBinary();
  const dir = mkdtempSync(path.join(tmpdir(), 'mileage-s3-'));
  const data = path.join(dir, 'data');
  mkdirSync(data);
  const secret = () => randomBytes(18).toString('base64url');
  const admin = { accessKeyId: 'mileage-test-admin', secretAccessKey: secret() };
  const exporter = { accessKeyId: 'mileage-test-exporter', secretAccessKey: secret() };
  // Static identities: with any configured, a request that is not signed by one of them is refused.
  writeFileSync(
    path.join(dir, 's3.json'),
    JSON.stringify({
      identities: [
        {
          name: 'admin',
          credentials: [{ accessKey: admin.accessKeyId, secretKey: admin.secretAccessKey }],
          actions: ['Admin'],
        },
        {
          name: 'exporter',
          credentials: [{ accessKey: exporter.accessKeyId, secretKey: exporter.secretAccessKey }],
          actions: ['Read', 'Write', 'List'].map((action) => `${action}:${bucket}`),
        },
      ],
    }),
    { mode: 0o600 },
  );
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc] = await Promise.all(
    Array.from({ length: 8 }, () => freePort()),
  );
  // Every port is given (the gRPC ones default to port + 10000, which may be taken or past 65535); the Iceberg and
  // Lance catalogs, metrics, telemetry and the volume server's grace period before stopping are off.
  const args = [
    '-logtostderr=true',
    `-config_dir=${dir}`,
    'server',
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-dir=${data}`,
    `-master.port=${master}`,
    `-master.port.grpc=${masterGrpc}`,
    '-master.telemetry=false',
    '-master.volumeSizeLimitMB=64',
    `-volume.port=${volume}`,
    `-volume.port.grpc=${volumeGrpc}`,
    '-volume.preStopSeconds=0',
    '-filer',
    `-filer.port=${filer}`,
    `-filer.port.grpc=${filerGrpc}`,
    `-filer.localSocket=${path.join(dir, 'filer.sock')}`,
    '-s3',
    `-s3.port=${s3}`,
    `-s3.port.grpc=${s3Grpc}`,
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    `-s3.config=${path.join(dir, 's3.json')}`,
    `-s3.localSocket=${path.join(dir, 's3.sock')}`,
    '-s3.autoCreateBucket=false',
  ];
  const child = spawn(binary, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-LOG_TAIL_BYTES);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = once(child, 'exit');
  let exitedWith: string | undefined;
  void exited.then(
    ([code, signal]) => (exitedWith = `exited (${String(code ?? signal)})`),
    (err: Error) => (exitedWith = `could not be run: ${err.message}`),
  );
  // A test process that dies without its after hooks does not leave the server running.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const endpoint = `http://127.0.0.1:${s3}`;
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (!exitedWith) {
      // Killed: its data is thrown away, and a SIGTERM waits 15 s for the filer's last flush to the volume server
      // that `weed server` stopped first.
      child.kill('SIGKILL');
      await exited.catch(() => {});
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await untilItStores(endpoint, bucket, admin, () => exitedWith);
  } catch (err) {
    await stop();
    throw new Error(`SeaweedFS did not start: ${(err as Error).message}\n${log}`);
  }
  return {
    endpoint,
    bucket,
    storeOptions: { bucket, endpoint, region: REGION, forcePathStyle: true, credentials: exporter },
    stop,
  };
}

/**
 * Polls until the bucket exists and an object can be written and deleted in it: the gateway answers before the filer
 * and the master's first volumes are there, so its port being open is not enough.
 */
async function untilItStores(
  endpoint: string,
  bucket: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
  exited: () => string | undefined,
): Promise<void> {
  const { S3Client, CreateBucketCommand, PutObjectCommand, DeleteObjectCommand } = await import('@aws-sdk/client-s3');
  const client = new S3Client({
    endpoint,
    region: REGION,
    forcePathStyle: true,
    credentials,
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 2_000, requestTimeout: 5_000, throwOnRequestTimeout: true },
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let created = false;
  let last: unknown;
  try {
    for (;;) {
      const state = exited();
      if (state) throw new Error(state);
      try {
        if (!created) {
          await client.send(new CreateBucketCommand({ Bucket: bucket })).catch((err: unknown) => {
            if ((err as Error).name !== 'BucketAlreadyOwnedByYou') throw err;
          });
          created = true;
        }
        await client.send(new PutObjectCommand({ Bucket: bucket, Key: 'readiness-probe', Body: 'ready' }));
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'readiness-probe' }));
        return;
      } catch (err) {
        last = err;
      }
      if (Date.now() > deadline) throw new Error(`not storing objects within ${READY_TIMEOUT_MS} ms: ${String(last)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    client.destroy();
  }
}
