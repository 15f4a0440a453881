/**
 * The apiserver's IP and CIDR libraries (Kubernetes 1.30): `ip()`, `isIP()`, `ip.isCanonical()`, `cidr()`,
 * `isCIDR()` and their methods. Parsing is as strict as Go's netip, which they use: no leading zeros in an IPv4
 * part, and, as the apiserver adds, no zone (`%eth0`) and no IPv4-mapped IPv6 address (`::ffff:1.2.3.4`).
 */
import type { Comparable } from './equality.js';
import type { Library } from './library.js';
import { CelEvalError, parses } from './library.js';

/** An address: 4 bytes (IPv4) or 16 (IPv6). */
export class IPAddress implements Comparable {
  constructor(readonly bytes: Uint8Array) {}
  get family(): 4 | 6 {
    return this.bytes.length === 4 ? 4 : 6;
  }
  equals(other: unknown): boolean {
    return other instanceof IPAddress && Buffer.compare(this.bytes, other.bytes) === 0;
  }
  toString(): string {
    return formatIP(this.bytes);
  }
}

/** A prefix: its address as written (not masked) and its length in bits. */
export class CIDRPrefix implements Comparable {
  constructor(
    readonly ip: IPAddress,
    readonly bits: number,
  ) {}
  equals(other: unknown): boolean {
    return other instanceof CIDRPrefix && this.bits === other.bits && this.ip.equals(other.ip);
  }
  toString(): string {
    return `${this.ip.toString()}/${this.bits}`;
  }
  masked(): CIDRPrefix {
    const bytes = Uint8Array.from(this.ip.bytes);
    for (let i = 0; i < bytes.length; i++) {
      const keep = Math.max(0, Math.min(8, this.bits - i * 8));
      bytes[i] = (bytes[i] ?? 0) & ((0xff << (8 - keep)) & 0xff);
    }
    return new CIDRPrefix(new IPAddress(bytes), this.bits);
  }
  containsIP(ip: IPAddress): boolean {
    return ip.family === this.ip.family && new CIDRPrefix(ip, this.bits).masked().ip.equals(this.masked().ip);
  }
  containsCIDR(other: CIDRPrefix): boolean {
    return other.bits >= this.bits && this.containsIP(other.ip);
  }
}

function parseIPv4(s: string): number[] | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out.push(n);
  }
  return out;
}

function parseIPv6(text: string): number[] | undefined {
  let s = text;
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    // An embedded IPv4 address (`64:ff9b::1.2.3.4`) is its last two groups.
    const v4 = parseIPv4(s.slice(lastColon + 1));
    if (!v4) return undefined;
    const [a = 0, b = 0, c = 0, d = 0] = v4;
    s = `${s.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string): number[] | undefined => {
    if (part === '') return [];
    const out: number[] = [];
    for (const g of part.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const left = groups(halves[0] ?? '');
  const right = halves.length === 2 ? groups(halves[1] ?? '') : [];
  if (!left || !right) return undefined;
  const have = left.length + right.length;
  if (halves.length === 1 ? have !== 8 : have > 7) return undefined;
  const all = [...left, ...new Array<number>(8 - have).fill(0), ...right];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

/** Parses an address as the apiserver does, or throws CelEvalError saying why not. */
export function parseIP(s: string): IPAddress {
  if (s.includes('%')) throw new CelEvalError('invalid_argument', `IP address with zone value is not allowed: ${s}`);
  if (!s.includes(':')) {
    const v4 = parseIPv4(s);
    if (!v4) throw new CelEvalError('invalid_argument', `IP Address "${s}" parse error`);
    return new IPAddress(Uint8Array.from(v4));
  }
  const v6 = parseIPv6(s);
  if (!v6) throw new CelEvalError('invalid_argument', `IP Address "${s}" parse error`);
  const bytes = Uint8Array.from(v6);
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff)
    throw new CelEvalError('invalid_argument', `IPv4-mapped IPv6 address "${s}" is not allowed`);
  return new IPAddress(bytes);
}

/** The canonical text (RFC 5952 for IPv6: lower case, the longest run of zero groups as ::). */
function formatIP(bytes: Uint8Array): string {
  if (bytes.length === 4) return Array.from(bytes).join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) [bestStart, bestLen] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

export function parseCIDR(s: string): CIDRPrefix {
  const slash = s.indexOf('/');
  const bitsText = slash < 0 ? '' : s.slice(slash + 1);
  if (slash < 0 || !/^(0|[1-9][0-9]{0,2})$/.test(bitsText))
    throw new CelEvalError('invalid_argument', `network address parse error during conversion from string: ${s}`);
  const ip = parseIP(s.slice(0, slash));
  const bits = Number(bitsText);
  if (bits > (ip.family === 4 ? 32 : 128))
    throw new CelEvalError('invalid_argument', `network address parse error during conversion from string: ${s}`);
  return new CIDRPrefix(ip, bits);
}

const inRange = (b: Uint8Array, first: number, mask: number, value: number): boolean =>
  ((b[first] ?? 0) & mask) === value;

function isLoopback(ip: IPAddress): boolean {
  const b = ip.bytes;
  return ip.family === 4 ? b[0] === 127 : b.slice(0, 15).every((x) => x === 0) && b[15] === 1;
}
const isUnspecified = (ip: IPAddress): boolean => ip.bytes.every((x) => x === 0);
const isMulticast = (ip: IPAddress): boolean =>
  ip.family === 4 ? inRange(ip.bytes, 0, 0xf0, 0xe0) : ip.bytes[0] === 0xff;
function isLinkLocalUnicast(ip: IPAddress): boolean {
  const b = ip.bytes;
  return ip.family === 4 ? b[0] === 169 && b[1] === 254 : b[0] === 0xfe && inRange(b, 1, 0xc0, 0x80);
}
function isLinkLocalMulticast(ip: IPAddress): boolean {
  const b = ip.bytes;
  return ip.family === 4 ? b[0] === 224 && b[1] === 0 && b[2] === 0 : b[0] === 0xff && inRange(b, 1, 0x0f, 0x02);
}
function isGlobalUnicast(ip: IPAddress): boolean {
  const broadcast = ip.family === 4 && ip.bytes.every((x) => x === 255);
  return !(isUnspecified(ip) || isLoopback(ip) || isMulticast(ip) || isLinkLocalUnicast(ip) || broadcast);
}

/** The `ip` in `ip.isCanonical(s)` (the function `ip(s)` is another name). */
export class IPNamespace {}

const asIP = (v: IPAddress | string): IPAddress => (typeof v === 'string' ? parseIP(v) : v);
const asCIDR = (v: CIDRPrefix | string): CIDRPrefix => (typeof v === 'string' ? parseCIDR(v) : v);

export const ipLibrary: Library = {
  types: [
    ['net.IP', IPAddress],
    ['net.CIDR', CIDRPrefix],
    ['IPNamespace', IPNamespace],
  ],
  constants: [['ip', 'IPNamespace', new IPNamespace()]],
  functions: [
    ['ip(string): net.IP', (s: string) => parseIP(s)],
    ['isIP(string): bool', (s: string) => parses(() => parseIP(s))],
    ['IPNamespace.isCanonical(string): bool', (_ns: unknown, s: string) => parseIP(s).toString() === s],
    ['string(net.IP): string', (ip: IPAddress) => ip.toString()],
    ['net.IP.family(): int', (ip: IPAddress) => BigInt(ip.family)],
    ['net.IP.isUnspecified(): bool', (ip: IPAddress) => isUnspecified(ip)],
    ['net.IP.isLoopback(): bool', (ip: IPAddress) => isLoopback(ip)],
    ['net.IP.isLinkLocalMulticast(): bool', (ip: IPAddress) => isLinkLocalMulticast(ip)],
    ['net.IP.isLinkLocalUnicast(): bool', (ip: IPAddress) => isLinkLocalUnicast(ip)],
    ['net.IP.isGlobalUnicast(): bool', (ip: IPAddress) => isGlobalUnicast(ip)],
    ['cidr(string): net.CIDR', (s: string) => parseCIDR(s)],
    ['isCIDR(string): bool', (s: string) => parses(() => parseCIDR(s))],
    ['string(net.CIDR): string', (c: CIDRPrefix) => c.toString()],
    ['net.CIDR.containsIP(net.IP): bool', (c: CIDRPrefix, ip: IPAddress) => c.containsIP(ip)],
    ['net.CIDR.containsIP(string): bool', (c: CIDRPrefix, ip: string) => c.containsIP(asIP(ip))],
    ['net.CIDR.containsCIDR(net.CIDR): bool', (c: CIDRPrefix, o: CIDRPrefix) => c.containsCIDR(o)],
    ['net.CIDR.containsCIDR(string): bool', (c: CIDRPrefix, o: string) => c.containsCIDR(asCIDR(o))],
    ['net.CIDR.ip(): net.IP', (c: CIDRPrefix) => c.ip],
    ['net.CIDR.masked(): net.CIDR', (c: CIDRPrefix) => c.masked()],
    ['net.CIDR.prefixLength(): int', (c: CIDRPrefix) => BigInt(c.bits)],
  ],
  operators: [
    ['net.IP == net.IP', (a: IPAddress, b: IPAddress) => a.equals(b)],
    ['net.CIDR == net.CIDR', (a: CIDRPrefix, b: CIDRPrefix) => a.equals(b)],
  ],
};
