/** The `audit:` section (docs/configuration.md "audit"): its defaults, and each bound refused with its field. */
import assert from 'node:assert/strict';
import { configError, parseConfig } from '../../helpers/config.js';

describe('config audit section', function () {
  it('is off with bounded defaults when absent', function () {
    assert.deepEqual(parseConfig('chain: []').audit, {
      intervalSeconds: 0,
      timeoutSeconds: 300,
      maxObjectsPerResource: 5000,
      maxObjects: 20000,
      concurrency: 4,
      maxResultsPerReport: 1000,
    });
  });

  it('takes every field, and keeps maxObjectsPerResource within maxObjects by default', function () {
    assert.deepEqual(
      parseConfig(
        'audit: { intervalSeconds: 3600, timeoutSeconds: 60, maxObjects: 100, concurrency: 2, maxResultsPerReport: 50 }',
      ).audit,
      {
        intervalSeconds: 3600,
        timeoutSeconds: 60,
        maxObjectsPerResource: 100,
        maxObjects: 100,
        concurrency: 2,
        maxResultsPerReport: 50,
      },
    );
  });

  it('refuses values out of bounds and unknown fields, naming the field', function () {
    assert.match(configError('audit: { intervalSeconds: -1 }'), /audit\.intervalSeconds/);
    assert.match(configError('audit: { concurrency: 0 }'), /audit\.concurrency/);
    assert.match(configError('audit: { maxResultsPerReport: 5000 }'), /audit\.maxResultsPerReport/);
    assert.match(configError('audit: { timeoutSeconds: 1.5 }'), /audit\.timeoutSeconds/);
    assert.match(configError('audit: { interval: 60 }'), /audit/);
  });
});
