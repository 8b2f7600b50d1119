// A small node:http server that answers the drive lists as CONTRACT §2 / §2a describe them (keyset pages newest first,
// opaque cursors bound to the query, filter_by / date_after, include_deleted tombstones, 410 for a lower bound older
// than the retention), with faults injected on demand (429 / 503 with Retry-After, 410, 422): the unit boundary of the
// sync helpers. Not the gateway: the end-to-end tests run against the real stack.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FeedRow {
  /** The id as the list names it: `id` (reported drives) or `drive_id` (a user's drives). */
  id: number;
  modified: string;
  deleted?: boolean;
  /** Other fields of the live item. */
  fields?: Record<string, unknown>;
}

export interface Fault {
  /** 0: never answer (the request hangs until the client gives up). */
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface RecordedRequest {
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
}

export class ContractServer {
  rows: FeedRow[] = [];
  /** Answered, in order, instead of the next requests (one fault per request). */
  faults: Fault[] = [];
  requests: RecordedRequest[] = [];
  /** A lower bound older than this answers 410 when include_deleted=true (the retention). */
  completeSince: string | undefined;
  /** Called when a request arrives, before it is answered. */
  onRequest: ((request: RecordedRequest) => void) | undefined;
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const query = Object.fromEntries(url.searchParams);
    const recorded = { path: url.pathname, query, authorization: req.headers.authorization };
    this.requests.push(recorded);
    this.onRequest?.(recorded);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, {
        'content-type': 'application/json',
        'x-request-id': `req-${this.requests.length}`,
        ...headers,
      });
      res.end(JSON.stringify(body));
    };
    const fault = this.faults.shift();
    if (fault?.status === 0) return;
    if (fault) return send(fault.status, fault.body ?? { detail: `injected ${fault.status}` }, fault.headers);
    const reported = /^\/v1\/groups\/\d+\/reported-drives$/.test(url.pathname);
    if (!reported && !/^\/v1\/users\/[A-Za-z0-9]{10}\/drives$/.test(url.pathname))
      return send(404, { detail: 'Not Found' });

    const includeDeleted = query.include_deleted === 'true';
    const after = query.date_after;
    if (includeDeleted && after && this.completeSince && after < this.completeSince)
      return send(410, { type: '/errors/resync-required', title: 'Gone', status: 410, detail: 'Start a full sync' });
    const fingerprint = JSON.stringify([url.pathname, query.filter_by, after, includeDeleted, query.classification]);
    let position: { t: string; i: number } | undefined;
    if (query.cursor) {
      try {
        const decoded = JSON.parse(Buffer.from(query.cursor, 'base64url').toString()) as {
          q: string;
          t: string;
          i: number;
        };
        if (decoded.q !== fingerprint) throw new Error('foreign');
        position = decoded;
      } catch {
        return send(422, { detail: [{ loc: ['query', 'cursor'], msg: 'Invalid cursor', type: 'value_error' }] });
      }
    }
    const limit = Number(query.limit ?? 100);
    const listed = this.rows
      .filter((r) => includeDeleted || !r.deleted)
      .filter((r) => !after || r.modified > after)
      .filter((r) => !position || r.modified < position.t || (r.modified === position.t && r.id < position.i))
      .sort((a, b) => (a.modified === b.modified ? b.id - a.id : a.modified < b.modified ? 1 : -1));
    const page = listed.slice(0, limit);
    const hasMore = listed.length > limit;
    const last = page[page.length - 1];
    const idKey = reported ? 'id' : 'drive_id';
    send(200, {
      results: page.map((r) =>
        r.deleted
          ? { [idKey]: reported ? String(r.id) : r.id, deleted: true, modified: r.modified }
          : { [idKey]: reported ? String(r.id) : r.id, modified: r.modified, ...r.fields },
      ),
      has_more: hasMore,
      next_cursor:
        hasMore && last
          ? Buffer.from(JSON.stringify({ q: fingerprint, t: last.modified, i: last.id })).toString('base64url')
          : null,
    });
  }
}
