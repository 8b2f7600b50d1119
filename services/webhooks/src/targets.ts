// Where a webhook may be sent: the URL rules and the address rules (SSRF), checked at creation and at every attempt.
import { promises as dns } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { SPECIAL_ADDRESSES, type SpecialRange } from './special-addresses';

/** Address classes refused unless the deployment allows them (WEBHOOKS_ALLOW_PRIVATE_TARGETS). */
export const TARGET_CLASSES = ['loopback', 'private', 'link-local'] as const;
export type TargetClass = (typeof TARGET_CLASSES)[number];
/** What an address is: public, one of the allowable classes, or reserved (never allowed: unspecified, multicast, …). */
export type AddressClass = 'public' | TargetClass | 'reserved';

export interface TargetPolicy {
  /** production: https only; development: http too. */
  mode: 'production' | 'development';
  allow: ReadonlySet<TargetClass>;
  /** The ports a target may use, as inclusive ranges (WEBHOOKS_TARGET_PORTS; default 443 only). */
  ports: readonly PortRange[];
}

export type PortRange = readonly [number, number];
/** Every port: development stacks whose receivers listen on loopback on any port. */
export const ANY_PORT: readonly PortRange[] = [[1, 65535]];

/** One item of WEBHOOKS_TARGET_PORTS: a port (443) or an inclusive range (8000-8999); undefined when malformed. */
export function parsePortRange(item: string): PortRange | undefined {
  const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(item);
  if (!m) return undefined;
  const [lo, hi] = [Number(m[1]), Number(m[2] ?? m[1])];
  return lo >= 1 && lo <= hi && hi <= 65535 ? [lo, hi] : undefined;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** Every address a host name has (A and AAAA). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** What a client is told about a target refused for its address or name (the reason would map internal DNS). */
export const NOT_ALLOWED_TARGET = 'not an allowed target';

/**
 * A target refused by the rules (a client error at creation; a failed attempt, never retried sooner, at delivery).
 * `message` is what the client sees; `detail` (resolver answers, addresses) is for the server log only.
 */
export class TargetRefused extends Error {
  constructor(
    message: string,
    readonly detail: string = message,
  ) {
    super(message);
    this.name = 'TargetRefused';
  }
}

export const MAX_URL_LENGTH = 2048;

/** The registry as matchers, in its order (first match wins). */
const SPECIAL: { range: SpecialRange; type: 'ipv4' | 'ipv6'; list: BlockList }[] = SPECIAL_ADDRESSES.map((range) => {
  const [net, prefix] = range.prefix.split('/') as [string, string];
  const type = net.includes(':') ? 'ipv6' : 'ipv4';
  const list = new BlockList();
  list.addSubnet(net, Number(prefix), type);
  return { range, type, list };
});

/** The registry entry an address falls in, if any (BlockList would match IPv4 against ::ffff:0:0/96: same family only). */
export function specialRangeOf(address: string): SpecialRange | undefined {
  const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  return SPECIAL.find((s) => s.type === type && s.list.check(address, type))?.range;
}

/** The eight 16-bit groups of an IPv6 address. */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase().split('%')[0]!;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const o = v4[1]!.split('.').map(Number);
    text =
      text.slice(0, -v4[1]!.length) + `${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const h = head ? head.split(':') : [];
  const t = tail === undefined ? [] : tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - h.length - t.length).fill('0');
  return [...h, ...zeros, ...t].map((g) => parseInt(g, 16));
}

/** The IPv4 address an IPv6 one of an `embedded` range carries (6to4 in bits 16–47, the others in the last 32). */
function embeddedIpv4(address: string): string {
  const g = ipv6Groups(address);
  const [hi, lo] = g[0] === 0x2002 ? [g[1]!, g[2]!] : [g[6]!, g[7]!];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** The class of an IP address (IPv6 addresses that embed an IPv4 one are judged by it). */
export function classifyAddress(address: string): AddressClass {
  const bare = address.split('%')[0]!;
  if (!isIP(bare)) return 'reserved';
  const range = specialRangeOf(bare);
  if (!range) return 'public';
  return range.class === 'embedded' ? classifyAddress(embeddedIpv4(bare)) : range.class;
}

/** The URL rules: absolute http(s) URL (https only in production), a host, no credentials, bounded length. */
export function checkUrl(raw: string, policy: TargetPolicy): URL {
  if (raw.length > MAX_URL_LENGTH) throw new TargetRefused(`the URL is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TargetRefused('not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new TargetRefused(`the scheme ${url.protocol.replace(/:$/, '')} is not allowed (https only)`);
  if (url.protocol === 'http:' && policy.mode === 'production')
    throw new TargetRefused('only https targets are allowed in production');
  if (url.username || url.password) throw new TargetRefused('credentials in the URL are not allowed');
  if (!url.hostname) throw new TargetRefused('the URL has no host');
  if (url.hash) throw new TargetRefused('a fragment is not allowed');
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  if (!policy.ports.some(([lo, hi]) => port >= lo && port <= hi))
    throw new TargetRefused(NOT_ALLOWED_TARGET, `port ${port} is not an allowed target port`);
  return url;
}

function checkAddress(address: string, policy: TargetPolicy, hostname: string): void {
  const cls = classifyAddress(address);
  if (cls === 'public') return;
  if (cls !== 'reserved' && policy.allow.has(cls)) return;
  const shown = hostname === address ? address : `${hostname} (${address})`;
  throw new TargetRefused(NOT_ALLOWED_TARGET, `${shown} is a ${cls} address`);
}

/** The URL's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * The address to connect to: the host's addresses are resolved and every one must pass (a name with one private
 * address among public ones is refused). The caller connects to the returned address itself, so a second resolution
 * (DNS rebinding) cannot lead elsewhere.
 */
export async function resolveTarget(url: URL, policy: TargetPolicy, resolver: Resolver): Promise<ResolvedAddress> {
  const host = hostOf(url);
  const literal = isIP(host);
  let addresses: ResolvedAddress[];
  if (literal) addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await resolver(host);
    } catch (err) {
      const code = (err as { code?: string }).code ?? 'error';
      throw new TargetRefused(NOT_ALLOWED_TARGET, `${host} does not resolve (${code})`);
    }
    if (!addresses.length) throw new TargetRefused(NOT_ALLOWED_TARGET, `${host} has no address`);
  }
  for (const a of addresses) checkAddress(a.address, policy, host);
  return addresses[0]!;
}
