/**
 * The apiserver's format library (Kubernetes 1.31): `format.dns1123Label().validate(name)` and the other named
 * formats of Kubernetes names and OpenAPI strings, giving `optional.none()` when the value is valid and the
 * list of what is wrong otherwise; `format.named('labelValue')` finds one by name.
 */
import { Optional } from '@marcbachmann/cel-js';
import type { Library } from './library.js';
import { compileRegex } from './regex.js';
import { parseURL } from './urls.js';

type Check = (s: string) => string[];

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const SUBDOMAIN = `${LABEL}(\\.${LABEL})*`;
const DNS1035 = '[a-z]([-a-z0-9]*[a-z0-9])?';
const QUALIFIED = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_VALUE = '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?';

function pattern(max: number, regex: string, what: string): Check {
  // RE2: JavaScript's RegExp takes time quadratic in the length on these patterns, and the value is anyone's.
  const re = compileRegex(regex);
  return (s) => [
    ...(s.length > max ? [`must be no more than ${max} characters`] : []),
    ...(re.matches(s) ? [] : [`${what}, regex used for validation is '${regex}')`]),
  ];
}

const dns1123Label = pattern(
  63,
  LABEL,
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc'",
);
const dns1123Subdomain = pattern(
  253,
  SUBDOMAIN,
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com'",
);
const dns1035Label = pattern(
  63,
  DNS1035,
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123'",
);
const labelValue = pattern(
  63,
  LABEL_VALUE,
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345'",
);
const name = pattern(
  63,
  QUALIFIED,
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc'",
);

function qualifiedName(s: string): string[] {
  const parts = s.split('/');
  if (parts.length > 2)
    return [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ];
  const [prefix, local] = parts.length === 2 ? [parts[0] ?? '', parts[1] ?? ''] : [undefined, s];
  const errors = local === '' ? ['name part must be non-empty'] : name(local);
  if (prefix !== undefined)
    errors.push(
      ...(prefix === '' ? ['prefix part must be non-empty'] : dns1123Subdomain(prefix).map((e) => `prefix part ${e}`)),
    );
  return errors;
}

/** The generateName forms: a trailing '-' is allowed (the apiserver appends a suffix). */
const prefixOf =
  (check: Check): Check =>
  (s) =>
    check(s.endsWith('-') ? s.slice(0, -1) + 'a' : s);

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function validDate(s: string): boolean {
  const m = DATE.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

const FORMATS: ReadonlyMap<string, Check> = new Map<string, Check>([
  ['dns1123Label', dns1123Label],
  ['dns1123Subdomain', dns1123Subdomain],
  ['dns1035Label', dns1035Label],
  ['qualifiedName', qualifiedName],
  ['dns1123LabelPrefix', prefixOf(dns1123Label)],
  ['dns1123SubdomainPrefix', prefixOf(dns1123Subdomain)],
  ['dns1035LabelPrefix', prefixOf(dns1035Label)],
  ['labelValue', labelValue],
  [
    'uri',
    (s) => {
      try {
        parseURL(s);
        return [];
      } catch {
        return ['invalid URI'];
      }
    },
  ],
  ['uuid', (s) => (UUID.test(s) ? [] : ['does not match the UUID format'])],
  ['byte', (s) => (/^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0 ? [] : ['invalid base64'])],
  ['date', (s) => (validDate(s) ? [] : ['invalid date'])],
  ['datetime', (s) => (DATETIME.test(s) && validDate(s.slice(0, 10)) ? [] : ['invalid datetime'])],
]);

/** One named format. */
export class Format {
  constructor(
    readonly name: string,
    readonly check: Check,
  ) {}
}

/** The `format` in `format.dns1123Label()`. */
export class FormatNamespace {}

function validate(f: Format, s: string): Optional<string[]> {
  const errors = f.check(s);
  return errors.length === 0 ? Optional.none() : Optional.of(errors);
}

export const formatLibrary: Library = {
  types: [
    ['kubernetes.NamedFormat', Format],
    ['FormatNamespace', FormatNamespace],
  ],
  constants: [['format', 'FormatNamespace', new FormatNamespace()]],
  functions: [
    ...[...FORMATS].map(
      ([n, check]) => [`FormatNamespace.${n}(): kubernetes.NamedFormat`, () => new Format(n, check)] as const,
    ),
    [
      'FormatNamespace.named(string): optional<kubernetes.NamedFormat>',
      (_ns: unknown, n: string) => {
        const check = FORMATS.get(n);
        return check ? Optional.of(new Format(n, check)) : Optional.none();
      },
    ],
    ['kubernetes.NamedFormat.validate(string): optional<list<string>>', (f: Format, s: string) => validate(f, s)],
  ],
};
