// The load of a chaos run: a fixed number of requests in flight (like a pool of clients), each sent to the next
// gateway that is in the "Service" (ready and not terminating, as a Kubernetes Service's endpoints), over a mix of
// /v1 and SCIM reads with real tokens. Every request is recorded as a Sample.
import type { Sample } from './report';

export interface Request {
  route: string;
  path: string;
  token: string;
}

export class Endpoints {
  private readonly members = new Map<string, { ready: boolean; terminating: boolean; failures: number }>();
  private next = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly urls: string[],
    private readonly probe: (url: string) => Promise<boolean>,
  ) {
    for (const url of urls) this.members.set(url, { ready: true, terminating: false, failures: 0 });
  }

  /**
   * Probes each gateway's readiness every periodMs, as a kubelet does (failureThreshold 3, successThreshold 1): a
   * gateway whose probe fails three times in a row leaves the Service, one that answers 200 comes back.
   */
  watch(periodMs: number, failureThreshold = 3): void {
    const tick = async () => {
      await Promise.all(
        this.urls.map(async (url) => {
          const ok = await this.probe(url).catch(() => false);
          const member = this.members.get(url)!;
          member.failures = ok ? 0 : member.failures + 1;
          if (ok) member.ready = true;
          else if (member.failures >= failureThreshold) member.ready = false;
        }),
      );
      if (this.timer) this.timer = setTimeout(() => void tick(), periodMs);
    };
    this.timer = setTimeout(() => void tick(), 0);
  }

  unwatch(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * A pod being deleted leaves its Service's endpoints (before its preStop hook and SIGTERM); its replacement joins
   * once the caller has seen its readiness probe answer 200 (terminating false).
   */
  setTerminating(url: string, terminating: boolean): void {
    const member = this.members.get(url)!;
    member.terminating = terminating;
    member.ready = !terminating;
    member.failures = 0;
  }

  pick(): string | undefined {
    const live = this.urls.filter((u) => {
      const m = this.members.get(u)!;
      return m.ready && !m.terminating;
    });
    if (live.length === 0) return undefined;
    return live[this.next++ % live.length];
  }
}

export class Load {
  readonly samples: Sample[] = [];
  private running = false;
  private workers: Promise<void>[] = [];
  private probes: Promise<void>[] = [];

  constructor(
    private readonly endpoints: Endpoints,
    private readonly mix: (i: number) => Request,
    private readonly timeoutMs = 10_000,
  ) {}

  start(concurrency: number): void {
    this.running = true;
    let i = 0;
    for (let w = 0; w < concurrency; w++) {
      this.workers.push(
        (async () => {
          while (this.running) {
            const base = this.endpoints.pick();
            if (!base) {
              // No gateway in the Service: a client would get a connection refused from the load balancer.
              const now = Date.now();
              this.samples.push({
                startedAt: now,
                endedAt: now,
                status: 0,
                retryAfter: false,
                stream: 'main',
                route: 'no gateway in the Service',
              });
              await new Promise((r) => setTimeout(r, 50));
              continue;
            }
            await this.send(base, this.mix(i++), 'main');
          }
        })(),
      );
    }
  }

  /** A side stream of requests (e.g. with a token no gateway has seen), one at a time, until the returned stop(). */
  probe(stream: string, request: Request): () => Promise<void> {
    let on = true;
    const done = (async () => {
      while (on) {
        const base = this.endpoints.pick();
        if (base) await this.send(base, request, stream);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    this.probes.push(done);
    return async () => {
      on = false;
      await done;
    };
  }

  /**
   * A client paging through a list with `next_cursor`, one page at a time, each page from whichever gateway is next in
   * the Service (so a cursor one gateway issued is continued on the other), from the first page again after the last;
   * until the returned stop(). `first.path` must take `&cursor=`.
   */
  walk(stream: string, first: Request): () => Promise<void> {
    let on = true;
    const done = (async () => {
      let cursor: string | undefined;
      while (on) {
        const base = this.endpoints.pick();
        if (base) {
          const path = cursor ? `${first.path}&cursor=${encodeURIComponent(cursor)}` : first.path;
          const page = await this.send(base, { ...first, path }, stream);
          // A failed page is sent again with the same cursor: the walk only goes on from what it was given.
          if (page !== undefined)
            cursor = (JSON.parse(page) as { next_cursor: string | null }).next_cursor ?? undefined;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    this.probes.push(done);
    return async () => {
      on = false;
      await done;
    };
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all([...this.workers, ...this.probes]);
  }

  /** Sends one request and records it; the body of a 2xx answer. */
  private async send(base: string, request: Request, stream: string): Promise<string | undefined> {
    const startedAt = Date.now();
    let status = 0;
    let retryAfter = false;
    let body: string | undefined;
    let failure: Sample['failure'];
    try {
      const res = await fetch(`${base}${request.path}`, {
        headers: { authorization: `Bearer ${request.token}` },
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const text = await res.text();
      status = res.status;
      retryAfter = res.headers.has('retry-after');
      if (res.ok) body = text;
      else failure = { requestId: res.headers.get('x-request-id') ?? '', detail: problemDetail(text) };
    } catch (err) {
      status = 0;
      failure = { requestId: '', detail: String((err as Error).message ?? err) };
    }
    this.samples.push({
      startedAt,
      endedAt: Date.now(),
      status,
      retryAfter,
      stream,
      route: request.route,
      ...(failure && { failure }),
    });
    return body;
  }
}

/** What a failed answer's body says (a problem's `detail`, a SCIM error's `detail`), at most 200 characters. */
function problemDetail(text: string): string {
  try {
    const detail = (JSON.parse(text) as { detail?: unknown }).detail;
    return (typeof detail === 'string' ? detail : JSON.stringify(detail ?? text)).slice(0, 200);
  } catch {
    return text.slice(0, 200);
  }
}
