import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_EXTENSION_REFERENCES, parseExtensionReferences } from '../../../server/extensions/extension-references.js';
import { createReferenceIndex, smallest } from '../../../server/kube/reference-index.js';

const refs = (annotation: string) => parseExtensionReferences(annotation);

describe('the reference index (namespaces naming each extension)', () => {
  it('counts the namespaces that name an extension as they add and drop it, and says which extensions changed', () => {
    const index = createReferenceIndex();
    assert.deepEqual([...index.set('team-a', refs('scanner,labels'))], ['scanner', 'labels']);
    assert.deepEqual([...index.set('team-b', refs('scanner'))], ['scanner']);
    assert.equal(index.count('scanner'), 2);
    assert.equal(index.count('labels'), 1);

    assert.deepEqual(
      [...index.set('team-a', refs('labels,quota'))],
      ['scanner', 'quota'],
      'scanner dropped, quota added',
    );
    assert.equal(index.count('scanner'), 1);
    assert.equal(index.count('quota'), 1);
    assert.deepEqual([...index.set('team-a', refs('quota, labels'))], [], 'the same names in another order');

    assert.deepEqual([...index.delete('team-a')].sort(), ['labels', 'quota']);
    assert.deepEqual(
      ['scanner', 'labels', 'quota'].map((e) => index.count(e)),
      [1, 0, 0],
    );
    assert.deepEqual([...index.delete('team-a')], [], 'deleting twice changes nothing');
    assert.deepEqual([...index.set('team-b', refs(''))], ['scanner'], 'the annotation removed');
    assert.equal(index.count('scanner'), 0);
  });

  it('keeps what a namespace references for the request path, invalid names included, and forgets a namespace that references nothing', () => {
    const index = createReferenceIndex();
    index.set('team-a', refs('scanner,Not_A_Name'));
    assert.deepEqual(index.of('team-a'), { names: ['scanner'], invalid: ['Not_A_Name'] });
    index.set('team-b', refs('Only_Invalid'));
    assert.deepEqual(index.of('team-b'), { names: [], invalid: ['Only_Invalid'] });
    index.set('team-a', refs(''));
    assert.equal(index.of('team-a'), undefined);
  });

  it('names the first referencing namespaces in sorted order, and counts them all', () => {
    const index = createReferenceIndex();
    for (const ns of ['delta', 'alpha', 'echo', 'charlie', 'bravo']) index.set(ns, refs('scanner'));
    assert.deepEqual(index.namespaces('scanner', 3), { count: 5, first: ['alpha', 'bravo', 'charlie'] });
    assert.deepEqual(index.namespaces('scanner', 10), {
      count: 5,
      first: ['alpha', 'bravo', 'charlie', 'delta', 'echo'],
    });
    assert.deepEqual(index.namespaces('nobody', 3), { count: 0, first: [] });
  });

  it('reads at most MAX_EXTENSION_REFERENCES names of a hostile annotation, and leaves nothing behind once it is gone', () => {
    const index = createReferenceIndex();
    const names = Array.from({ length: 5000 }, (_, i) => `x${i}`);
    const changed = index.set('hostile', refs(names.join(',')));
    assert.equal(changed.size, MAX_EXTENSION_REFERENCES);
    index.delete('hostile');
    assert.equal(
      names.reduce((total, name) => total + index.count(name), 0),
      0,
    );
  });

  it('agrees with counting every namespace from scratch, after any sequence of adds, updates and deletes', () => {
    const extension = fc.constantFrom('a', 'b', 'c', 'd', 'Bad_Name');
    const namespace = fc.constantFrom('ns-1', 'ns-2', 'ns-3', 'ns-4');
    const event = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), namespace, annotation: fc.array(extension, { maxLength: 4 }) }),
      fc.record({ kind: fc.constant('delete' as const), namespace }),
    );
    fc.assert(
      fc.property(fc.array(event, { maxLength: 40 }), (events) => {
        const index = createReferenceIndex();
        const model = new Map<string, string>();
        for (const e of events) {
          const before = new Map(['a', 'b', 'c', 'd'].map((x) => [x, index.count(x)]));
          const changed =
            e.kind === 'set' ? index.set(e.namespace, refs(e.annotation.join(','))) : index.delete(e.namespace);
          if (e.kind === 'set') model.set(e.namespace, e.annotation.join(','));
          else model.delete(e.namespace);
          for (const x of ['a', 'b', 'c', 'd']) {
            const holders = [...model].filter(([, a]) => refs(a).names.includes(x)).map(([ns]) => ns);
            assert.equal(index.count(x), holders.length, x);
            assert.deepEqual(index.namespaces(x, 2).first, holders.sort().slice(0, 2));
            assert.equal(
              changed.has(x),
              index.count(x) !== before.get(x),
              `${x} reported as changed exactly when it did`,
            );
          }
        }
      }),
    );
  });
});

describe('smallest()', () => {
  it('keeps the n smallest names in order, from any order', () => {
    assert.deepEqual(smallest(['m', 'c', 'x', 'a', 'k', 'b'], 3), ['a', 'b', 'c']);
    assert.deepEqual(smallest(['b', 'a'], 5), ['a', 'b']);
    assert.deepEqual(smallest(['a'], 0), []);
  });
});
