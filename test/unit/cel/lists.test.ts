import assert from 'node:assert/strict';
import { expectValues, failure } from './run-cel.js';

describe('cel lists library', () => {
  it('tells whether a list is sorted', () => {
    expectValues([
      ['[1, 2, 3].isSorted()', true],
      ["['a', 'c', 'b'].isSorted()", false],
      ['[].isSorted()', true],
      ['[1.0, 1.0, 2.5].isSorted()', true],
    ]);
  });

  it('sums ints and doubles, 0 for an empty list', () => {
    expectValues([
      ['[1, 2, 3].sum()', 6n],
      ['[1.5, 2.5].sum()', 4],
      ['[].sum()', 0n],
    ]);
    assert.equal(failure('[9223372036854775807, 1].sum()').code, 'numeric_overflow');
  });

  it('gives the smallest and largest element, an error for an empty list', () => {
    expectValues([
      ['[3, 1, 2].min()', 1n],
      ['[3, 1, 2].max()', 3n],
      ["['b', 'a'].min()", 'a'],
    ]);
    assert.equal(failure('[].min()').code, 'invalid_argument');
  });

  it('finds the first and last index of an element, -1 when absent', () => {
    expectValues([
      ['[1, 2, 2, 3].indexOf(2)', 1n],
      ['[1, 2, 2, 3].lastIndexOf(2)', 2n],
      ['[1, 2, 3].indexOf(4)', -1n],
      ["[{'a': 1}, {'a': 2}].indexOf({'a': 2})", 1n],
    ]);
  });

  it('slices, flattens, reverses, sorts and dedupes (the lists extension of Kubernetes 1.34)', () => {
    expectValues([
      ['[1, 2, 3, 4].slice(1, 3)', [2n, 3n]],
      ['[1, 2].slice(2, 2)', []],
      ['[[1, 2], [3]].flatten()', [1n, 2n, 3n]],
      ['[[dyn(1), dyn([2])], [dyn(3)]].flatten()', [1n, [2n], 3n]],
      ['[[dyn(1), dyn([2])], [dyn(3)]].flatten(2)', [1n, 2n, 3n]],
      ['[1, 2, 3].reverse()', [3n, 2n, 1n]],
      ["['b', 'c', 'a'].sort()", ['a', 'b', 'c']],
      ['[3, 1, 2].sort()', [1n, 2n, 3n]],
      ['[1, 2, 1, 3, 2].distinct()', [1n, 2n, 3n]],
      ['[[1], [1], [2]].distinct()', [[1n], [2n]]],
      ['lists.range(4)', [0n, 1n, 2n, 3n]],
      ['lists.range(0)', []],
    ]);
    assert.equal(failure('[1, 2].slice(1, 3)').code, 'invalid_argument');
    assert.equal(failure('[1, 2].slice(2, 1)').code, 'invalid_argument');
    assert.equal(failure('[1, 2].slice(-1, 1)').code, 'invalid_argument');
    assert.equal(failure('[[1]].flatten(-1)').code, 'invalid_argument');
  });

  it("has the engine's macros: all, exists, exists_one, map, filter, and cel.bind", () => {
    const object = {
      spec: {
        containers: [
          { name: 'a', image: 'x:1' },
          { name: 'b', image: 'y:2' },
        ],
      },
    };
    expectValues(
      [
        ["object.spec.containers.all(c, c.image.contains(':'))", true],
        ["object.spec.containers.exists(c, c.name == 'b')", true],
        ["object.spec.containers.exists_one(c, c.name.startsWith('a'))", true],
        ['object.spec.containers.map(c, c.name)', ['a', 'b']],
        ["object.spec.containers.filter(c, c.name != 'a').map(c, c.image)", ['y:2']],
        ['cel.bind(cs, object.spec.containers, cs.size() + cs.size())', 4n],
      ],
      { object },
    );
  });
});

describe('cel sets library', () => {
  it('compares lists as sets', () => {
    expectValues([
      ['sets.contains([1, 2, 3], [3, 1])', true],
      ['sets.contains([1, 2], [4])', false],
      ['sets.contains([1], [])', true],
      ['sets.equivalent([1, 2, 2], [2, 1])', true],
      ['sets.equivalent([1], [1, 2])', false],
      ['sets.intersects([1, 2], [2, 5])', true],
      ['sets.intersects([1], [])', false],
      ['sets.contains([1.0], [1])', true],
    ]);
  });
});
