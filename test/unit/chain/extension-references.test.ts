import assert from 'node:assert/strict';
import { MAX_EXTENSION_REFERENCES, parseExtensionReferences } from '../../../server/extensions/extension-references.js';

describe('parseExtensionReferences() (the admissiongateway.io/extensions annotation)', () => {
  it('reads comma-separated names, trimmed, in order, without duplicates', () => {
    assert.deepEqual(parseExtensionReferences(' scanner, labels ,,scanner'), {
      names: ['scanner', 'labels'],
      invalid: [],
    });
  });

  it('reads nothing from an absent, empty or non-string value', () => {
    for (const value of [undefined, null, '', '  ', 42, ['scanner']]) {
      assert.deepEqual(parseExtensionReferences(value), { names: [], invalid: [] });
    }
  });

  it('sets aside what cannot be a name, clipped, to be warned about', () => {
    const long = 'x'.repeat(100);
    assert.deepEqual(parseExtensionReferences(`Scanner,ok,a b,${long}`), {
      names: ['ok'],
      invalid: ['Scanner', 'a b', `${'x'.repeat(63)}…`],
    });
  });

  it(`reads at most ${MAX_EXTENSION_REFERENCES} names and 1024 characters; the rest is reported`, () => {
    const names = Array.from({ length: MAX_EXTENSION_REFERENCES + 2 }, (_, i) => `e${i}`);
    const parsed = parseExtensionReferences(names.join(','));
    assert.deepEqual(parsed.names, names.slice(0, MAX_EXTENSION_REFERENCES));
    assert.deepEqual(parsed.invalid, names.slice(MAX_EXTENSION_REFERENCES));
    const huge = parseExtensionReferences(`a,${'b,'.repeat(2000)}`);
    assert.deepEqual(huge.names, ['a', 'b']);
    assert.deepEqual(huge.invalid, ['(2978 more characters)']);
  });
});
