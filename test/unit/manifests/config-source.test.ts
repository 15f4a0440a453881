import assert from 'node:assert/strict';
import { ConfigError } from '../../../server/base/errors.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configMapGatewayYaml, loadManifestsConfig } from '../../../server/manifests/config-source.js';

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

describe('loadManifestsConfig()', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gw-configmap-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function refusal(text: string): Promise<string> {
    await writeFile(join(dir, 'cm.yaml'), text);
    try {
      await loadManifestsConfig('cm.yaml', { isDefaultLocation: false, cwd: dir });
    } catch (err) {
      assert.ok(err instanceof ConfigError, String(err));
      return err.message;
    }
    assert.fail('the ConfigMap was accepted');
  }

  it("names the ConfigMap file's own line and column for a mistake in a literal block", async () => {
    const text =
      'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: c }\ndata:\n  gateway.yaml: |\n' +
      '    server:\n      port: eighty\n';

    assert.equal(await refusal(text), 'cm.yaml:7:7: server.port: expected an integer from 0 to 65535, got "eighty"');
  });

  it("otherwise names the key it read, and the line within the key's text (a quoted string keeps no lines of the file)", async () => {
    const text = 'kind: ConfigMap\ndata:\n  gateway.yaml: "server:\\n  port: eighty\\n"\n';

    assert.equal(
      await refusal(text),
      'cm.yaml (data.gateway.yaml):2:3: server.port: expected an integer from 0 to 65535, got "eighty"',
    );
  });
});
