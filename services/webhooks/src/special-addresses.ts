// The IANA special-purpose address registries (iana-ipv4-special-registry, iana-ipv6-special-registry), plus
// multicast and the deprecated ranges IPv6 still parses, as one table: every webhook target is judged against it.

/**
 * loopback, private, link-local: refused unless the deployment allows the class (WEBHOOKS_ALLOW_PRIVATE_TARGETS);
 * reserved: always refused; embedded: judged by the IPv4 address the IPv6 one carries.
 */
export type SpecialClass = 'loopback' | 'private' | 'link-local' | 'reserved' | 'embedded';

export interface SpecialRange {
  prefix: string;
  name: string;
  rfc: string;
  class: SpecialClass;
}

/** First match wins: more specific entries that are allowable come before the reserved ranges that hold them. */
export const SPECIAL_ADDRESSES: readonly SpecialRange[] = [
  // IPv4
  { prefix: '127.0.0.0/8', name: 'Loopback', rfc: 'RFC 1122', class: 'loopback' },
  { prefix: '10.0.0.0/8', name: 'Private-Use', rfc: 'RFC 1918', class: 'private' },
  { prefix: '172.16.0.0/12', name: 'Private-Use', rfc: 'RFC 1918', class: 'private' },
  { prefix: '192.168.0.0/16', name: 'Private-Use', rfc: 'RFC 1918', class: 'private' },
  { prefix: '100.64.0.0/10', name: 'Shared Address Space', rfc: 'RFC 6598', class: 'private' },
  { prefix: '169.254.0.0/16', name: 'Link Local', rfc: 'RFC 3927', class: 'link-local' },
  { prefix: '0.0.0.0/8', name: '"This network"', rfc: 'RFC 791', class: 'reserved' },
  { prefix: '192.0.0.0/24', name: 'IETF Protocol Assignments', rfc: 'RFC 6890', class: 'reserved' },
  { prefix: '192.0.0.0/29', name: 'IPv4 Service Continuity Prefix', rfc: 'RFC 7335', class: 'reserved' },
  { prefix: '192.0.0.8/32', name: 'IPv4 dummy address', rfc: 'RFC 7600', class: 'reserved' },
  { prefix: '192.0.0.9/32', name: 'Port Control Protocol Anycast', rfc: 'RFC 7723', class: 'reserved' },
  { prefix: '192.0.0.10/32', name: 'Traversal Using Relays around NAT Anycast', rfc: 'RFC 8155', class: 'reserved' },
  { prefix: '192.0.0.170/32', name: 'NAT64/DNS64 Discovery', rfc: 'RFC 8880', class: 'reserved' },
  { prefix: '192.0.0.171/32', name: 'NAT64/DNS64 Discovery', rfc: 'RFC 8880', class: 'reserved' },
  { prefix: '192.0.2.0/24', name: 'Documentation (TEST-NET-1)', rfc: 'RFC 5737', class: 'reserved' },
  { prefix: '192.31.196.0/24', name: 'AS112-v4', rfc: 'RFC 7535', class: 'reserved' },
  { prefix: '192.52.193.0/24', name: 'AMT', rfc: 'RFC 7450', class: 'reserved' },
  { prefix: '192.88.99.0/24', name: 'Deprecated (6to4 Relay Anycast)', rfc: 'RFC 7526', class: 'reserved' },
  { prefix: '192.175.48.0/24', name: 'Direct Delegation AS112 Service', rfc: 'RFC 7534', class: 'reserved' },
  { prefix: '198.18.0.0/15', name: 'Benchmarking', rfc: 'RFC 2544', class: 'reserved' },
  { prefix: '198.51.100.0/24', name: 'Documentation (TEST-NET-2)', rfc: 'RFC 5737', class: 'reserved' },
  { prefix: '203.0.113.0/24', name: 'Documentation (TEST-NET-3)', rfc: 'RFC 5737', class: 'reserved' },
  { prefix: '224.0.0.0/4', name: 'Multicast', rfc: 'RFC 5771', class: 'reserved' },
  { prefix: '240.0.0.0/4', name: 'Reserved', rfc: 'RFC 1112', class: 'reserved' },
  { prefix: '255.255.255.255/32', name: 'Limited Broadcast', rfc: 'RFC 919', class: 'reserved' },
  // IPv6
  { prefix: '::1/128', name: 'Loopback Address', rfc: 'RFC 4291', class: 'loopback' },
  { prefix: 'fc00::/7', name: 'Unique-Local', rfc: 'RFC 4193', class: 'private' },
  { prefix: 'fe80::/10', name: 'Link-Local Unicast', rfc: 'RFC 4291', class: 'link-local' },
  { prefix: '::ffff:0:0/96', name: 'IPv4-mapped Address', rfc: 'RFC 4291', class: 'embedded' },
  { prefix: '64:ff9b::/96', name: 'IPv4-IPv6 Translat.', rfc: 'RFC 6052', class: 'embedded' },
  { prefix: '2002::/16', name: '6to4', rfc: 'RFC 3056', class: 'embedded' },
  { prefix: '::/128', name: 'Unspecified Address', rfc: 'RFC 4291', class: 'reserved' },
  { prefix: '::/96', name: 'IPv4-compatible Address (deprecated)', rfc: 'RFC 4291', class: 'reserved' },
  { prefix: '64:ff9b:1::/48', name: 'IPv4-IPv6 Translat. (local use)', rfc: 'RFC 8215', class: 'reserved' },
  { prefix: '100::/64', name: 'Discard-Only Address Block', rfc: 'RFC 6666', class: 'reserved' },
  { prefix: '100:0:0:1::/64', name: 'Dummy IPv6 Prefix', rfc: 'RFC 9780', class: 'reserved' },
  { prefix: '2001::/23', name: 'IETF Protocol Assignments', rfc: 'RFC 2928', class: 'reserved' },
  { prefix: '2001::/32', name: 'TEREDO', rfc: 'RFC 4380', class: 'reserved' },
  { prefix: '2001:1::1/128', name: 'Port Control Protocol Anycast', rfc: 'RFC 7723', class: 'reserved' },
  { prefix: '2001:1::2/128', name: 'Traversal Using Relays around NAT Anycast', rfc: 'RFC 8155', class: 'reserved' },
  { prefix: '2001:1::3/128', name: 'DNS-SD Service Registration Protocol Anycast', rfc: 'RFC 9665', class: 'reserved' },
  { prefix: '2001:2::/48', name: 'Benchmarking', rfc: 'RFC 5180', class: 'reserved' },
  { prefix: '2001:3::/32', name: 'AMT', rfc: 'RFC 7450', class: 'reserved' },
  { prefix: '2001:4:112::/48', name: 'AS112-v6', rfc: 'RFC 7535', class: 'reserved' },
  { prefix: '2001:10::/28', name: 'Deprecated (previously ORCHID)', rfc: 'RFC 4843', class: 'reserved' },
  { prefix: '2001:20::/28', name: 'ORCHIDv2', rfc: 'RFC 7343', class: 'reserved' },
  { prefix: '2001:30::/28', name: 'Drone Remote ID Protocol Entity Tags', rfc: 'RFC 9374', class: 'reserved' },
  { prefix: '2001:db8::/32', name: 'Documentation', rfc: 'RFC 3849', class: 'reserved' },
  { prefix: '2620:4f:8000::/48', name: 'Direct Delegation AS112 Service', rfc: 'RFC 7534', class: 'reserved' },
  { prefix: '3fff::/20', name: 'Documentation', rfc: 'RFC 9637', class: 'reserved' },
  { prefix: '5f00::/16', name: 'Segment Routing (SRv6) SIDs', rfc: 'RFC 9602', class: 'reserved' },
  { prefix: 'fec0::/10', name: 'Site-Local (deprecated)', rfc: 'RFC 3879', class: 'reserved' },
  { prefix: 'ff00::/8', name: 'Multicast', rfc: 'RFC 4291', class: 'reserved' },
];
