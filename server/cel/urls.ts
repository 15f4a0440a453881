/**
 * The apiserver's URL library: `url()`, `isURL()` and the parts of a URL, parsed as Go's url.ParseRequestURI
 * does (an absolute URI with a scheme, or an absolute path; nothing is normalised, so `https://a:443` keeps
 * its port).
 */
import type { Library } from './library.js';
import { CelEvalError, parses } from './library.js';

export class URLValue {
  constructor(
    readonly scheme: string,
    /** host[:port] as written (`[::1]:80`). */
    readonly host: string,
    readonly rawPath: string,
    readonly rawQuery: string,
  ) {}
}

const bad = (s: string, why: string): CelEvalError =>
  new CelEvalError('invalid_argument', `URL parse error during conversion from string: parse "${s}": ${why}`);

function unescape(s: string, plusIsSpace: boolean): string | undefined {
  if (/%(?![0-9a-fA-F]{2})/.test(s)) return undefined;
  try {
    return decodeURIComponent(plusIsSpace ? s.replace(/\+/g, ' ') : s);
  } catch {
    return undefined;
  }
}

export function parseURL(s: string): URLValue {
  if (s === '') throw bad(s, 'empty url');
  let rest = s;
  let scheme = '';
  if (!rest.startsWith('/')) {
    const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(rest);
    if (!m?.[1]) throw bad(s, 'invalid URI for request');
    scheme = m[1];
    rest = rest.slice(m[0].length);
    if (!rest.startsWith('/')) throw bad(s, 'invalid URI for request');
  }
  const q = rest.indexOf('?');
  const rawQuery = q < 0 ? '' : rest.slice(q + 1);
  if (q >= 0) rest = rest.slice(0, q);
  let host = '';
  if (scheme !== '' && rest.startsWith('//')) {
    const slash = rest.indexOf('/', 2);
    const authority = slash < 0 ? rest.slice(2) : rest.slice(2, slash);
    rest = slash < 0 ? '' : rest.slice(slash);
    host = authority.slice(authority.lastIndexOf('@') + 1);
    const afterHost = host.startsWith('[') ? host.slice(host.indexOf(']') + 1) : host;
    const colon = afterHost.lastIndexOf(':');
    const port = colon >= 0 ? afterHost.slice(colon) : host.startsWith('[') ? afterHost : '';
    if (host.startsWith('[') && !host.includes(']')) throw bad(s, "missing ']' in host");
    if (port !== '' && !/^:\d*$/.test(port)) throw bad(s, `invalid port "${port}" after host`);
    if (unescape(host, false) === undefined) throw bad(s, 'invalid URL escape');
  }
  if (unescape(rest, false) === undefined) throw bad(s, 'invalid URL escape');
  return new URLValue(scheme, host, rest, rawQuery);
}

function hostname(u: URLValue): string {
  if (u.host.startsWith('[')) return u.host.slice(1, u.host.indexOf(']'));
  const colon = u.host.lastIndexOf(':');
  return colon < 0 ? u.host : u.host.slice(0, colon);
}

function port(u: URLValue): string {
  const after = u.host.startsWith('[') ? u.host.slice(u.host.indexOf(']') + 1) : u.host;
  const colon = after.lastIndexOf(':');
  return colon < 0 ? '' : after.slice(colon + 1);
}

/** The path as it travels: as written when that is a valid escaping, else re-escaped (Go's EscapedPath). */
function escapedPath(u: URLValue): string {
  if (/^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9a-fA-F]{2})*$/.test(u.rawPath)) return u.rawPath;
  const decoded = unescape(u.rawPath, false) ?? u.rawPath;
  return Array.from(Buffer.from(decoded, 'utf8'))
    .map((b) => {
      const c = String.fromCharCode(b);
      return /[A-Za-z0-9\-._~$&+,/:;=@]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');
}

/** The query's values by key, in order (Go's url.Values; a pair it cannot decode is left out). */
function query(u: URLValue): Record<string, string[]> {
  // A plain object, which the engine reads as a CEL map; keys defined, not assigned, so "__proto__" is a key.
  const out: Record<string, string[]> = {};
  for (const pair of u.rawQuery.split('&')) {
    if (pair === '' || pair.includes(';')) continue;
    const eq = pair.indexOf('=');
    const key = unescape(eq < 0 ? pair : pair.slice(0, eq), true);
    const value = unescape(eq < 0 ? '' : pair.slice(eq + 1), true);
    if (key === undefined || value === undefined) continue;
    if (!Object.hasOwn(out, key)) Object.defineProperty(out, key, { value: [], enumerable: true, writable: true });
    out[key]?.push(value);
  }
  return out;
}

export const urlLibrary: Library = {
  types: [['kubernetes.URL', URLValue]],
  functions: [
    ['url(string): kubernetes.URL', (s: string) => parseURL(s)],
    ['isURL(string): bool', (s: string) => parses(() => parseURL(s))],
    ['kubernetes.URL.getScheme(): string', (u: URLValue) => u.scheme],
    ['kubernetes.URL.getHost(): string', (u: URLValue) => u.host],
    ['kubernetes.URL.getHostname(): string', (u: URLValue) => hostname(u)],
    ['kubernetes.URL.getPort(): string', (u: URLValue) => port(u)],
    ['kubernetes.URL.getEscapedPath(): string', (u: URLValue) => escapedPath(u)],
    ['kubernetes.URL.getQuery(): map<string, list<string>>', (u: URLValue) => query(u)],
  ],
};
