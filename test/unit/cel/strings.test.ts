import assert from 'node:assert/strict';
import { expectValues, failure } from './run-cel.js';

describe('cel strings library', () => {
  it("has the engine's string functions, counting code points", () => {
    expectValues([
      ["'TacoCat'.lowerAscii()", 'tacocat'],
      ["'TacoCat'.upperAscii()", 'TACOCAT'],
      ["'  \\ttrim\\n '.trim()", 'trim'],
      ["'hello mellow'.indexOf('ello')", 1n],
      ["'hello mellow'.indexOf('ello', 2)", 7n],
      ["'hello mellow'.lastIndexOf('ello')", 7n],
      ["'hello mellow'.indexOf('jello')", -1n],
      ["'tacocat'.substring(4)", 'cat'],
      ["'tacocat'.substring(0, 4)", 'taco'],
      ["'a,b,c'.split(',')", ['a', 'b', 'c']],
      ["'a,b,c'.split(',', 2)", ['a', 'b,c']],
      ["['a', 'b', 'c'].join()", 'abc'],
      ["['a', 'b', 'c'].join(', ')", 'a, b, c'],
      ["'héllo'.indexOf('l')", 2n],
    ]);
  });

  it('replaces all occurrences, or the first n', () => {
    expectValues([
      ["'hello hello'.replace('he', 'we')", 'wello wello'],
      ["'hello hello'.replace('he', 'we', -1)", 'wello wello'],
      ["'hello hello'.replace('he', 'we', 1)", 'wello hello'],
      ["'hello hello'.replace('he', 'we', 0)", 'hello hello'],
      ["'abc'.replace('', '-')", '-a-b-c-'],
    ]);
  });

  it('gives the character at an index, the empty string at the end, an error past it', () => {
    expectValues([
      ["'hello'.charAt(4)", 'o'],
      ["'hello'.charAt(5)", ''],
      ["'héllo'.charAt(1)", 'é'],
    ]);
    assert.equal(failure("'hello'.charAt(6)").code, 'index_out_of_bounds');
  });

  it('formats values into a template', () => {
    expectValues([
      ["'%s and %s'.format(['this', 'that'])", 'this and that'],
      ["'%d replicas'.format([3])", '3 replicas'],
      ["'%.2f'.format([1.239])", '1.24'],
      ["'%f'.format([2.5])", '2.500000'],
      ["'%e'.format([1234.5])", '1.234500e+03'],
      ["'%b'.format([5])", '101'],
      ["'%o'.format([8])", '10'],
      ["'%x'.format([255])", 'ff'],
      ["'%X'.format([255])", 'FF'],
      ["'%x'.format(['hi'])", '6869'],
      ["'100%% %s'.format([true])", '100% true'],
      ["'%s'.format([[1, 2]])", '[1, 2]'],
      ["'%s/%s'.format([dyn('a'), dyn(1)])", 'a/1'],
    ]);
    assert.equal(failure("'%s %s'.format(['one'])").code, 'invalid_argument');
    assert.equal(failure("'%d'.format(['x'])").code, 'invalid_argument');
    assert.equal(failure("'%.101f'.format([1.0])").code, 'invalid_argument');
  });

  it('quotes a string as a CEL string literal', () => {
    expectValues([
      ['strings.quote(\'say "hi"\\n\')', '"say \\"hi\\"\\n"'],
      ["strings.quote('plain')", '"plain"'],
    ]);
  });
});
