import assert from 'node:assert/strict';
import { expectValues, failure } from './run-cel.js';

describe('cel URL library', () => {
  it('parses an absolute URI or an absolute path, and refuses anything else', () => {
    expectValues([
      ["isURL('https://example.com:80/path?query=value')", true],
      ["isURL('/absolute-path')", true],
      ["isURL('relative-path')", false],
      ["isURL('mailto:someone@example.com')", false],
      ["isURL('')", false],
      ["isURL('https://example.com/%zz')", false],
    ]);
    assert.equal(failure("url('../relative')").code, 'invalid_argument');
  });

  it('gives the parts of a URL as written', () => {
    expectValues([
      ["url('https://example.com:80/').getScheme()", 'https'],
      ["url('https://example.com:80/').getHost()", 'example.com:80'],
      ["url('https://example.com/').getHost()", 'example.com'],
      ["url('https://[::1]:80/').getHost()", '[::1]:80'],
      ["url('https://[::1]:80/').getHostname()", '::1'],
      ["url('https://example.com:443/').getPort()", '443'],
      ["url('https://example.com/').getPort()", ''],
      ["url('/path').getHost()", ''],
      ["url('https://example.com/path with spaces/').getEscapedPath()", '/path%20with%20spaces/'],
      ["url('https://example.com/a%20b').getEscapedPath()", '/a%20b'],
    ]);
  });

  it('gives the query as a map of lists, decoded', () => {
    expectValues([
      ["url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()", { k1: ['a'], k2: ['b', 'c'] }],
      ["url('https://example.com/path?key').getQuery()", { key: [''] }],
      ["url('https://example.com/path?a=x+y&b=%2F').getQuery()", { a: ['x y'], b: ['/'] }],
      ["url('https://example.com/path').getQuery()", {}],
      ["url('https://example.com/?k=1').getQuery()['k'][0]", '1'],
    ]);
  });
});
