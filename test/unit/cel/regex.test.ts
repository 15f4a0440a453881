import assert from 'node:assert/strict';
import { expectValues, failure, value } from './run-cel.js';

describe('cel regex library', () => {
  it('matches a part of the string, in RE2 syntax', () => {
    expectValues([
      ["'hello'.matches('ell')", true],
      ["'hello'.matches('^ell')", false],
      ["'web-7f9c'.matches('^[a-z]+-[0-9a-f]{4}$')", true],
    ]);
  });

  it('finds the first match, or the empty string', () => {
    expectValues([
      ["'abc 123'.find('[0-9]+')", '123'],
      ["'abc'.find('[0-9]+')", ''],
    ]);
  });

  it('finds all non-overlapping matches, at most a limit of them', () => {
    expectValues([
      ["'123 abc 456'.findAll('[0-9]+')", ['123', '456']],
      ["'123 abc 456'.findAll('[0-9]+', 1)", ['123']],
      ["'123 abc 456'.findAll('[0-9]+', 0)", []],
      ["'123 abc 456'.findAll('[0-9]+', -1)", ['123', '456']],
      ["'abc'.findAll('x*')", ['', '', '', '']],
      ["'xax'.findAll('x*')", ['x', 'x']],
    ]);
  });

  it('runs in time linear in the input: a pattern that backtracks in JavaScript does not stall', () => {
    const object = { s: `${'a'.repeat(50_000)}b` };
    assert.equal(value("object.s.matches('^(a+)+$')", { object }), false);
  });

  it('refuses at evaluation a pattern only known then that RE2 cannot compile', () => {
    const error = failure("'x'.matches(object.p)", { object: { p: '(?=x)' } });
    assert.equal(error.code, 'invalid_argument');
    assert.match(error.message, /invalid regular expression/);
  });
});
