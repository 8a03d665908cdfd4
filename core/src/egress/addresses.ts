/**
 * IP address classification for the egress policy: is an address on the public internet, and
 * if not, which kind of non-public range holds it.
 *
 * Guarantees (tested in core/test/egress.test.ts, "address classification"):
 * - IPv4: unspecified 0/8, private 10/8 172.16/12 192.168/16, loopback 127/8, CGNAT 100.64/10,
 *   link-local 169.254/16, IETF 192.0.0/24, documentation, benchmarking 198.18/15, the
 *   deprecated 6to4 relay 192.88.99/24, multicast 224/4, reserved 240/4 and broadcast are
 *   non-public; cloud metadata endpoints (169.254.169.254, 169.254.170.2, 100.100.100.200,
 *   192.0.0.192, fd00:ec2::254) are named as such.
 * - IPv6: every address outside global unicast 2000::/3 is non-public, except the forms that
 *   embed an IPv4 address, which are judged by that address: IPv4-mapped ::ffff:a.b.c.d, NAT64
 *   64:ff9b::/96 and 6to4 2002::/16. IPv4-compatible ::a.b.c.d, IPv4-translated
 *   ::ffff:0:a.b.c.d, local-use NAT64 64:ff9b:1::/48 and Teredo 2001::/32 (whose client
 *   address is obfuscated and whose relays are not ours to trust) are refused whole, as are
 *   documentation, benchmarking and ORCHID ranges inside 2000::/3.
 * - An address with a zone id (fe80::1%eth0) is non-public; anything that is not an IP
 *   address is non-public (callers resolve names first).
 */
import net from 'node:net';

export type AddressKind =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'cloud_metadata'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved'
  | 'unique_local'
  | 'site_local'
  | 'ipv4_compatible'
  | 'teredo'
  | 'not_an_address';

export interface AddressClass {
  kind: AddressKind;
  /** For IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4): that address. */
  embeddedIPv4?: string;
}

type Range = readonly [prefix: bigint, length: number, kind: AddressKind];

function parseIPv4(addr: string): number | null {
  if (net.isIPv4(addr) === false) return null;
  const p = addr.split('.').map(Number);
  return ((p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3]) >>> 0;
}

/** 128-bit value of a textual IPv6 address (zone id removed), or null. */
function parseIPv6(addr: string): bigint | null {
  const bare = addr.split('%')[0];
  if (!net.isIPv6(bare)) return null;
  let text = bare;
  // A trailing dotted quad stands for the last two groups.
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const v4 = parseIPv4(quad[1]);
    if (v4 === null) return null;
    text = `${text.slice(0, -quad[1].length)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups =
    tail === null ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  if (groups.length !== 8) return null;
  let v = 0n;
  for (const g of groups) v = (v << 16n) | BigInt(parseInt(g || '0', 16));
  return v;
}

const v4 = (a: string, len: number, kind: AddressKind): Range => [BigInt(parseIPv4(a)!), len, kind];
const v6 = (a: string, len: number, kind: AddressKind): Range => [parseIPv6(a)!, len, kind];

/** First match wins: specific entries come before the ranges that contain them. */
const IPV4_RANGES: readonly Range[] = [
  v4('169.254.169.254', 32, 'cloud_metadata'), // AWS, GCP, Azure, OpenStack, DigitalOcean
  v4('169.254.170.2', 32, 'cloud_metadata'), // AWS ECS task metadata
  v4('100.100.100.200', 32, 'cloud_metadata'), // Alibaba Cloud
  v4('192.0.0.192', 32, 'cloud_metadata'), // Oracle Cloud
  v4('0.0.0.0', 8, 'unspecified'),
  v4('10.0.0.0', 8, 'private'),
  v4('100.64.0.0', 10, 'cgnat'),
  v4('127.0.0.0', 8, 'loopback'),
  v4('169.254.0.0', 16, 'link_local'),
  v4('172.16.0.0', 12, 'private'),
  v4('192.0.0.0', 24, 'reserved'),
  v4('192.0.2.0', 24, 'documentation'),
  v4('192.88.99.0', 24, 'reserved'),
  v4('192.168.0.0', 16, 'private'),
  v4('198.18.0.0', 15, 'benchmarking'),
  v4('198.51.100.0', 24, 'documentation'),
  v4('203.0.113.0', 24, 'documentation'),
  v4('224.0.0.0', 4, 'multicast'),
  v4('255.255.255.255', 32, 'broadcast'),
  v4('240.0.0.0', 4, 'reserved'),
];

const IPV6_RANGES: readonly Range[] = [
  v6('::', 128, 'unspecified'),
  v6('::1', 128, 'loopback'),
  v6('::ffff:0:0:0', 96, 'reserved'), // IPv4-translated (RFC 2765)
  v6('::', 96, 'ipv4_compatible'), // deprecated (RFC 4291 §2.5.5.1)
  v6('64:ff9b:1::', 48, 'private'), // local-use NAT64 (RFC 8215)
  v6('100::', 64, 'reserved'), // discard
  v6('2001::', 32, 'teredo'),
  v6('2001:2::', 48, 'benchmarking'),
  v6('2001:10::', 28, 'reserved'), // ORCHID
  v6('2001:20::', 28, 'reserved'), // ORCHIDv2
  v6('2001:db8::', 32, 'documentation'),
  v6('3fff::', 20, 'documentation'),
  v6('5f00::', 16, 'reserved'), // SRv6 SIDs
  v6('fd00:ec2::254', 128, 'cloud_metadata'), // AWS IMDS over IPv6
  v6('fc00::', 7, 'unique_local'),
  v6('fe80::', 10, 'link_local'),
  v6('fec0::', 10, 'site_local'),
  v6('ff00::', 8, 'multicast'),
];

const inRange = (value: bigint, bits: number, [prefix, len]: Range) =>
  len === 0 || value >> BigInt(bits - len) === prefix >> BigInt(bits - len);

function classifyV4(value: number): AddressClass {
  const hit = IPV4_RANGES.find((r) => inRange(BigInt(value), 32, r));
  return { kind: hit ? hit[2] : 'public' };
}

const v4Text = (n: number) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;

/** Classifies a literal IPv4 or IPv6 address. */
export function classifyAddress(addr: string): AddressClass {
  const a = addr.trim();
  const four = parseIPv4(a);
  if (four !== null) return classifyV4(four);
  const six = parseIPv6(a);
  if (six === null) return { kind: 'not_an_address' };
  if (a.includes('%')) return { kind: 'link_local' };
  // Forms that carry an IPv4 address are judged by it.
  const embedded = (n: bigint): AddressClass => {
    const inner = Number(n & 0xffffffffn);
    return { ...classifyV4(inner), embeddedIPv4: v4Text(inner) };
  };
  if (six >> 32n === 0xffffn) return embedded(six); // ::ffff:a.b.c.d
  if (six >> 32n === 0x64ff9b0000000000000000n) return embedded(six); // 64:ff9b::/96
  if (six >> 112n === 0x2002n) return embedded(six >> 80n); // 2002:AABB:CCDD::/48
  const hit = IPV6_RANGES.find((r) => inRange(six, 128, r));
  if (hit) return { kind: hit[2] };
  if (six >> 125n !== 1n) return { kind: 'reserved' }; // outside global unicast 2000::/3
  return { kind: 'public' };
}

/** True for every address that is not plainly on the public internet (see classifyAddress). */
export function isNonPublicAddress(addr: string): boolean {
  return classifyAddress(addr).kind !== 'public';
}

/**
 * One canonical text per address, for equality: IPv4 dotted quad (an IPv4-mapped IPv6
 * address collapses to its IPv4 form), IPv6 as 32 lower-case hex digits. Null if not an address.
 */
export function canonicalAddress(addr: string): string | null {
  const a = addr.trim().replace(/^\[(.*)\]$/, '$1');
  const four = parseIPv4(a);
  if (four !== null) return v4Text(four);
  const six = parseIPv6(a);
  if (six === null) return null;
  if (six >> 32n === 0xffffn) return v4Text(Number(six & 0xffffffffn));
  return six.toString(16).padStart(32, '0');
}
