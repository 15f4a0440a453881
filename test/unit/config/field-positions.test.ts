import assert from 'node:assert/strict';
import { LineCounter, parseDocument } from 'yaml';
import { ConfigError } from '../../../server/base/errors.js';
import { locateConfigError, yamlFieldLocator } from '../../../server/config/field-positions.js';

function locatorOf(text: string) {
  const lineCounter = new LineCounter();
  return yamlFieldLocator(parseDocument(text, { lineCounter }), lineCounter);
}

const TEXT = `server:
  port: 8443
defaults: &labels
  team: a
chain:
  - plugin: default-labels
    settings:
      labels: *labels
  - plugin: require-labels
    settings: { labels: [team, app.kubernetes.io/name] }
`;

describe('yamlFieldLocator()', () => {
  const locate = locatorOf(TEXT);

  it('finds a map key, a list item and a key inside a flow collection', () => {
    assert.deepEqual(locate('server.port'), { line: 2, col: 3 });
    assert.deepEqual(locate('chain[1]'), { line: 9, col: 5 });
    assert.deepEqual(locate('chain[1].settings.labels[1]'), { line: 10, col: 32 });
  });

  it('follows an alias to the node it names', () => {
    assert.deepEqual(locate('chain[0].settings.labels.team'), { line: 4, col: 3 });
  });

  it('places a field that is not written at its nearest written ancestor', () => {
    assert.deepEqual(locate('chain[0].settings.annotations'), { line: 7, col: 5 });
    assert.deepEqual(locate('chain[7].plugin'), { line: 5, col: 1 });
    assert.deepEqual(locate('log.level'), { line: 1, col: 1 });
  });

  it('places the root, and nothing at all in an empty document', () => {
    assert.deepEqual(locate(''), { line: 1, col: 1 });
    assert.equal(locatorOf('')('chain'), undefined);
  });
});

describe('locateConfigError()', () => {
  const locate = locatorOf(TEXT);

  it('gives a ConfigError about the file the position of its field, in its message', () => {
    const err = new ConfigError('gw.yaml', 'server.port', 'expected an integer');

    const located = locateConfigError(err, 'gw.yaml', locate);

    assert.ok(located instanceof ConfigError);
    assert.equal(located.message, 'gw.yaml:2:3: server.port: expected an integer');
    assert.deepEqual(located.position, { line: 2, col: 3 });
  });

  it('leaves other errors, errors about other files and errors already placed as they are', () => {
    const other = new ConfigError('provider', 'chain[0].caBundle', 'expected base64');
    const placed = new ConfigError('gw.yaml', 'server.port', 'x', { line: 9, col: 9 });
    const plain = new Error('boom');

    assert.equal(locateConfigError(other, 'gw.yaml', locate), other);
    assert.equal(locateConfigError(placed, 'gw.yaml', locate), placed);
    assert.equal(locateConfigError(plain, 'gw.yaml', locate), plain);
    assert.equal(locateConfigError(other, 'provider', undefined), other);
  });
});
