import assert from 'node:assert/strict';
import { ConfigError } from '../../../server/base/errors.js';
import { configMapGatewayYaml } from '../../../server/manifests/config-source.js';

describe('configMapGatewayYaml()', () => {
  it('returns the gateway.yaml text a ConfigMap carries', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: c }\ndata:\n  gateway.yaml: |\n    chain: []\n';
    assert.equal(configMapGatewayYaml(text, 'cm.yaml'), 'chain: []\n');
  });

  it('returns undefined for a gateway.yaml (so it is loaded as one)', () => {
    assert.equal(configMapGatewayYaml('kind: GatewayConfig\nchain: []\n', 'gateway.yaml'), undefined);
    assert.equal(configMapGatewayYaml('a: [', 'broken.yaml'), undefined);
  });

  it('refuses a ConfigMap without a gateway.yaml key, naming the field', () => {
    assert.throws(
      () => configMapGatewayYaml('kind: ConfigMap\ndata: { other.yaml: x }\n', 'cm.yaml'),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.message === 'cm.yaml: data.gateway.yaml: expected the gateway configuration as a string in this ConfigMap',
    );
  });
});
