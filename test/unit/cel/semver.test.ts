import assert from 'node:assert/strict';
import { expectValues, failure } from './run-cel.js';

describe('cel semver library', () => {
  it('parses strict semantic versions, and looser ones when asked to normalize', () => {
    expectValues([
      ["isSemver('1.2.3')", true],
      ["isSemver('1.2.3-rc.1+build.5')", true],
      ["isSemver('v1.2.3')", false],
      ["isSemver('1.2')", false],
      ["isSemver('01.2.3')", false],
      ["isSemver('v1.2', true)", true],
      ["isSemver('01.02.03', true)", true],
      ["semver('v1.2', true) == semver('1.2.0')", true],
      ["semver('v01.02.3', true).minor()", 2n],
    ]);
    assert.equal(failure("semver('v1.2.3')").code, 'invalid_argument');
  });

  it('gives the parts and compares by precedence (pre-releases first, build metadata ignored)', () => {
    expectValues([
      ["semver('1.2.3').major()", 1n],
      ["semver('1.2.3').minor()", 2n],
      ["semver('1.2.3').patch()", 3n],
      ["semver('1.10.0').isGreaterThan(semver('1.9.9'))", true],
      ["semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", true],
      ["semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))", true],
      ["semver('1.0.0-2').isLessThan(semver('1.0.0-10'))", true],
      ["semver('1.0.0+a').compareTo(semver('1.0.0+b'))", 0n],
      ["semver('2.0.0').compareTo(semver('1.0.0'))", 1n],
    ]);
  });
});
