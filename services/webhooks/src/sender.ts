// One delivery attempt over HTTP(S) to an address that was checked: connect and total timeouts, the response body
// read up to a small limit, redirects never followed.
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP } from 'node:net';
import {
  checkUrl,
  hostOf,
  NOT_ALLOWED_TARGET,
  resolveTarget,
  TargetRefused,
  type Resolver,
  type TargetPolicy,
} from './targets';

export interface SendOptions {
  policy: TargetPolicy;
  resolver: Resolver;
  connectTimeoutMs: number;
  timeoutMs: number;
  /** Response bytes read at most (the rest is discarded by closing the connection). */
  maxResponseBytes?: number;
}

export type Outcome = 'success' | 'http_error' | 'network_error' | 'timeout' | 'refused';

export interface AttemptResult {
  outcome: Outcome;
  /** The response's status; 0 when there was none. */
  statusCode: number;
  latencyMs: number;
  /** Why it failed (never the response body); empty on success. */
  error: string;
  /** For the log only: why a target was refused (addresses, DNS answers). */
  detail?: string;
}

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 16, maxFreeSockets: 4, timeout: 30_000 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 16, maxFreeSockets: 4, timeout: 30_000 }),
};

export const USER_AGENT = 'mileage-webhooks/1';

/** Sends `body` to `rawUrl` with the given headers; never throws. */
export async function sendWebhook(
  rawUrl: string,
  headers: Record<string, string>,
  body: string,
  options: SendOptions,
): Promise<AttemptResult> {
  const started = performance.now();
  const done = (outcome: Outcome, statusCode: number, error: string): AttemptResult => ({
    outcome,
    statusCode,
    latencyMs: Math.round(performance.now() - started),
    error,
  });
  let url: URL;
  let target: { address: string; family: number };
  try {
    // The URL rules again (the mode may have changed since the webhook was created), then the addresses.
    url = checkUrl(rawUrl, options.policy);
    const timeout = new Promise<never>((_, reject) =>
      setTimeout(
        () => reject(new TargetRefused(NOT_ALLOWED_TARGET, 'DNS resolution timed out')),
        options.connectTimeoutMs,
      ).unref(),
    );
    target = await Promise.race([resolveTarget(url, options.policy, options.resolver), timeout]);
  } catch (err) {
    // The recorded error is shown to the group's administrators: the detail (addresses, DNS) only in the log.
    return {
      ...done('refused', 0, err instanceof Error ? err.message : 'refused'),
      ...(err instanceof TargetRefused ? { detail: err.detail } : {}),
    };
  }
  const secure = url.protocol === 'https:';
  const host = hostOf(url);
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(total);
      clearTimeout(connect);
      resolve(result);
    };
    const request = (secure ? https : http).request({
      protocol: url.protocol,
      // The checked address, never the name again (DNS rebinding); TLS still verifies the certificate for the name.
      host: target.address,
      family: target.family,
      port: url.port || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      ...(secure && !isIP(host) ? { servername: host } : {}),
      headers: {
        ...headers,
        host: url.host,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': USER_AGENT,
      },
    });
    const total = setTimeout(() => {
      request.destroy();
      finish(done('timeout', 0, `no response within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    let connect: NodeJS.Timeout | undefined;
    request.on('socket', (socket) => {
      if (!socket.connecting) return;
      connect = setTimeout(() => {
        request.destroy();
        finish(done('timeout', 0, `could not connect within ${options.connectTimeoutMs} ms`));
      }, options.connectTimeoutMs);
      socket.once(secure ? 'secureConnect' : 'connect', () => clearTimeout(connect));
    });
    request.on('error', (err: NodeJS.ErrnoException) => {
      finish(done('network_error', 0, err.code ? `${err.code}: ${err.message}` : err.message));
    });
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      let read = 0;
      const limit = options.maxResponseBytes ?? 4_096;
      const result = () =>
        status >= 200 && status < 300
          ? done('success', status, '')
          : done(
              'http_error',
              status,
              status >= 300 && status < 400 ? `HTTP ${status}: redirects are not followed` : `HTTP ${status}`,
            );
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > limit) {
          // The rest is not read: the connection is closed instead.
          finish(result());
          response.destroy();
        }
      });
      response.on('end', () => finish(result()));
      response.on('error', () => finish(result()));
      response.on('aborted', () => finish(result()));
    });
    request.end(body);
  });
}
