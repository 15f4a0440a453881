/**
 * oneByte: a string cut from a text with a character past U+00FF is held two bytes a character by V8, and comes
 * back one byte a character with the same characters; the configuration's strings are made so at load, so that a
 * step's name (and every warning, log line and trace built with it) is. V8's serializer shows how a string is held:
 * `"` for one byte a character, `c` for two.
 */
import assert from 'node:assert/strict';
import { serialize } from 'node:v8';
import { oneByte, oneByteStrings } from '../../../server/base/one-byte.js';
import { parseConfigText } from '../../../server/config/load.js';

const held = (s: string): 'one byte' | 'two bytes' => {
  const tag = serialize(s)[2];
  if (tag === 0x22) return 'one byte';
  if (tag === 0x63) return 'two bytes';
  throw new Error(`not a flat string: tag ${tag}`);
};

describe('oneByte', () => {
  const text = 'a comment — image-policy';
  const cut = text.slice(text.indexOf('image'));

  it('gives a string cut from a wider text back one byte a character, the same characters', () => {
    assert.equal(held(cut), 'two bytes');
    const made = oneByte(cut);
    assert.equal(made, 'image-policy');
    assert.equal(held(made), 'one byte');
    assert.equal(held(oneByte('ü and ÿ fit'.repeat(2).slice(1))), 'one byte');
  });

  it('leaves a string with a character past U+00FF as it is', () => {
    const wide = text.slice(2);
    assert.equal(oneByte(wide), wide);
    assert.equal(held(oneByte(wide)), 'two bytes');
  });

  it('makes the strings and keys of plain data so, an own "__proto__" key staying a key', () => {
    const data = JSON.parse('{"__proto__": {"x": 1}, "k": ["v"]}') as Record<string, unknown>;
    const wideKey = `${text}k`.slice(text.length);
    const made = oneByteStrings({ ...data, [wideKey]: [cut, 3, null, { [wideKey]: cut }] }) as Record<string, unknown>;
    assert.deepEqual(Object.keys(made), ['__proto__', 'k']);
    assert.equal(Object.getPrototypeOf(made), Object.prototype);
    assert.deepEqual(made.k, [cut, 3, null, { k: cut }]);
    const [first, , , inner] = made.k as [string, number, null, Record<string, string>];
    assert.equal(held(first), 'one byte');
    assert.equal(held(inner.k!), 'one byte');
  });

  it('is what a configuration with an em dash in a comment gives its step names', () => {
    const config = parseConfigText(
      '# the chain — one plugin\nchain:\n  - plugin: image-policy\n    name: images-checked\n',
      'gateway.yaml',
      '/',
    );
    const entry = config.chain[0] as { name?: string; plugin?: string };
    assert.equal(entry.name, 'images-checked');
    assert.equal(held(entry.name), 'one byte');
    assert.equal(held(entry.plugin!), 'one byte');
  });
});
