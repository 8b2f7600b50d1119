import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SPECIAL_ADDRESSES } from './special-addresses';
import {
  checkUrl,
  classifyAddress,
  specialRangeOf,
  NOT_ALLOWED_TARGET,
  resolveTarget,
  TargetRefused,
  type TargetPolicy,
  ANY_PORT,
  parsePortRange,
} from './targets';

const production: TargetPolicy = { mode: 'production', allow: new Set(), ports: [[443, 443]] };
const development: TargetPolicy = { mode: 'development', allow: new Set(['loopback']), ports: ANY_PORT };

describe('webhook target rules', () => {
  test('classifies addresses, also IPv6 forms that embed an IPv4 address', () => {
    const cases: [string, string][] = [
      ['93.184.216.34', 'public'],
      ['2606:4700::1111', 'public'],
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['::1', 'loopback'],
      ['10.0.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['100.64.0.1', 'private'],
      ['fd00::1', 'private'],
      ['169.254.169.254', 'link-local'],
      ['fe80::1', 'link-local'],
      ['0.0.0.0', 'reserved'],
      ['::', 'reserved'],
      ['224.0.0.1', 'reserved'],
      ['255.255.255.255', 'reserved'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:a9fe:a9fe', 'link-local'],
      ['64:ff9b::a00:1', 'private'],
      ['2002:7f00:1::', 'loopback'],
      ['not-an-ip', 'reserved'],
    ];
    for (const [address, cls] of cases) assert.equal(classifyAddress(address), cls, address);
  });

  test('every entry of the special-purpose registries: its first and last address are of its class', () => {
    const last = (prefix: string): string => {
      const [net, bits] = prefix.split('/') as [string, string];
      if (!net.includes(':')) {
        const n = net.split('.').reduce((a, o) => a * 256 + Number(o), 0) + 2 ** (32 - Number(bits)) - 1;
        return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
      }
      const groups = new URL(`http://[${net}]/`).hostname.slice(1, -1);
      const full = BigInt(`0x${expand(groups)}`) | ((1n << BigInt(128 - Number(bits))) - 1n);
      return full.toString(16).padStart(32, '0').match(/.{4}/g)!.join(':');
    };
    const expand = (v6: string) => {
      const [head, tail = ''] = v6.split('::');
      const h = head ? head.split(':') : [];
      const t = tail ? tail.split(':') : [];
      const zeros = v6.includes('::') ? Array<string>(8 - h.length - t.length).fill('0') : [];
      return [...h, ...zeros, ...t].map((g) => g.padStart(4, '0')).join('');
    };
    for (const entry of SPECIAL_ADDRESSES) {
      const first = entry.prefix.split('/')[0]!;
      for (const address of [first, last(entry.prefix)]) {
        assert.ok(specialRangeOf(address), `${address} (${entry.name})`);
        const cls = classifyAddress(address);
        if (entry.class === 'embedded') assert.notEqual(cls, 'public', `${address} (${entry.name})`);
        else assert.equal(cls, entry.class, `${address} (${entry.name})`);
      }
    }
  });

  test('the ranges the registry added are refused; IPv4-mapped, NAT64 and 6to4 are judged by the IPv4 address', () => {
    const cases: [string, string][] = [
      ['::a00:1', 'reserved'],
      ['::8.8.8.8', 'reserved'],
      ['64:ff9b:1::a00:1', 'reserved'],
      ['64:ff9b:1::808:808', 'reserved'],
      ['::ffff:8.8.8.8', 'public'],
      ['::ffff:0:0', 'reserved'],
      ['::ffff:192.0.2.1', 'reserved'],
      ['64:ff9b::808:808', 'public'],
      ['64:ff9b::c0a8:1', 'private'],
      ['2002:808:808::1', 'public'],
      ['2002:a9fe:a9fe::', 'link-local'],
      ['2001:db8::1', 'reserved'],
      ['3fff::1', 'reserved'],
      ['5f00::1', 'reserved'],
      ['192.88.99.1', 'reserved'],
      ['192.31.196.1', 'reserved'],
      ['8.8.8.8', 'public'],
      ['2001:4860:4860::8888', 'public'],
    ];
    for (const [address, cls] of cases) assert.equal(classifyAddress(address), cls, address);
  });

  test('URL rules: https only in production, no other scheme, no credentials', () => {
    assert.equal(checkUrl('https://example.com/hook', production).href, 'https://example.com/hook');
    for (const bad of [
      'http://example.com/hook',
      'file:///etc/passwd',
      'ftp://example.com/',
      'gopher://example.com/',
      'javascript:alert(1)',
      'https://user:pw@example.com/',
      'https://example.com/#frag',
      '/relative',
      `https://example.com/${'a'.repeat(2100)}`,
    ])
      assert.throws(() => checkUrl(bad, production), TargetRefused, bad);
    assert.equal(checkUrl('http://127.0.0.1:9/x', development).protocol, 'http:');
    assert.throws(() => checkUrl('file:///etc/passwd', development), TargetRefused);
  });

  test('ports: 443 only by default, else the configured ports and ranges', () => {
    assert.equal(checkUrl('https://example.com:443/hook', production).port, '');
    for (const bad of ['https://example.com:8443/', 'https://example.com:22/', 'https://example.com:80/'])
      assert.throws(() => checkUrl(bad, production), {
        message: NOT_ALLOWED_TARGET,
        detail: /not an allowed target port/,
      });
    const ranged: TargetPolicy = { ...production, ports: [parsePortRange('443')!, parsePortRange('8000-8999')!] };
    assert.equal(checkUrl('https://example.com:8443/', ranged).port, '8443');
    assert.throws(() => checkUrl('https://example.com:9000/', ranged), TargetRefused);
    for (const bad of ['0', '65536', '9-8', 'x', '443,', '1-2-3', ''])
      assert.equal(parsePortRange(bad), undefined, bad);
    assert.deepEqual(parsePortRange('1-65535'), ANY_PORT[0]);
  });

  test('every resolved address must pass; loopback only when allowed', async () => {
    const resolver = (addresses: string[]) => async () => addresses.map((address) => ({ address, family: 4 as const }));
    await assert.rejects(
      resolveTarget(new URL('https://rebind.example/'), production, resolver(['93.184.216.34', '10.0.0.1'])),
      { message: NOT_ALLOWED_TARGET, detail: 'rebind.example (10.0.0.1) is a private address' },
    );
    assert.deepEqual(await resolveTarget(new URL('https://ok.example/'), production, resolver(['93.184.216.34'])), {
      address: '93.184.216.34',
      family: 4,
    });
    await assert.rejects(resolveTarget(new URL('https://[::1]/'), production, resolver([])), {
      detail: '::1 is a loopback address',
    });
    await assert.rejects(resolveTarget(new URL('https://169.254.169.254/'), development, resolver([])), {
      detail: '169.254.169.254 is a link-local address',
    });
    assert.equal((await resolveTarget(new URL('http://127.0.0.1:1/'), development, resolver([]))).address, '127.0.0.1');
    await assert.rejects(
      resolveTarget(new URL('https://nowhere.example/'), production, async () => {
        throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
      }),
      { message: NOT_ALLOWED_TARGET, detail: 'nowhere.example does not resolve (ENOTFOUND)' },
    );
  });
});
