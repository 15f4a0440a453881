import assert from 'node:assert/strict';
import { expectValues, failure } from './run-cel.js';

describe('cel quantity library', () => {
  it('parses resource quantities and refuses what is not one', () => {
    expectValues([
      ["isQuantity('250m')", true],
      ["isQuantity('1.5Gi')", true],
      ["isQuantity('1e3')", true],
      ["isQuantity('-1')", true],
      ["isQuantity('.5')", true],
      ["isQuantity('1GB')", false],
      ["isQuantity('1..2')", false],
      ["isQuantity('')", false],
    ]);
    assert.equal(failure("quantity('ten')").code, 'invalid_argument');
  });

  it('compares quantities exactly, across suffixes', () => {
    expectValues([
      ["quantity('1Gi').isGreaterThan(quantity('1000Mi'))", true],
      ["quantity('500m').isLessThan(quantity('1'))", true],
      ["quantity('1k').compareTo(quantity('1000'))", 0n],
      ["quantity('2').compareTo(quantity('1'))", 1n],
      ["quantity('1') == quantity('1000m')", true],
      ["quantity('1Ki') == quantity('1024')", true],
    ]);
  });

  it('converts to integers and floats, and adds and subtracts', () => {
    expectValues([
      ["quantity('1Ki').asInteger()", 1024n],
      ["quantity('1.5').isInteger()", false],
      ["quantity('2k').isInteger()", true],
      ["quantity('250m').asApproximateFloat()", 0.25],
      ["quantity('-5').sign()", -1n],
      ["quantity('0').sign()", 0n],
      ["quantity('250m').add(quantity('750m')).asInteger()", 1n],
      ["quantity('1').add(2).asInteger()", 3n],
      ["quantity('1Gi').sub(quantity('512Mi')) == quantity('512Mi')", true],
      ["quantity('5').sub(6).sign()", -1n],
    ]);
    assert.equal(failure("quantity('1.5').asInteger()").code, 'invalid_argument');
    assert.equal(failure("quantity('100E').asInteger()").code, 'invalid_argument', 'past int64');
  });
});
