import assert from 'node:assert/strict';
import { parseQuantity } from '../../plugins/lib/quantity.js';

describe('lib/quantity', () => {
  describe('parseQuantity()', () => {
    const cases: ReadonlyArray<[string, string, number]> = [
      ['a plain integer', '2', 2],
      ['a plain decimal', '0.5', 0.5],
      ['a decimal without a leading digit', '.5', 0.5],
      ['a signed number', '+2', 2],
      ['millicores', '250m', 0.25],
      ['millicores equal to their decimal form', '300m', 0.3],
      ['nano units', '5n', 5e-9],
      ['micro units', '20u', 20e-6],
      ['kilo', '2k', 2000],
      ['mega', '128M', 128e6],
      ['giga', '1G', 1e9],
      ['tera', '1T', 1e12],
      ['peta', '1P', 1e15],
      ['exa (a bare E is a suffix, not an exponent)', '1E', 1e18],
      ['kibi', '1Ki', 1024],
      ['mebi', '128Mi', 134217728],
      ['gibi with a fraction', '1.5Gi', 1610612736],
      ['tebi', '1Ti', 2 ** 40],
      ['pebi', '1Pi', 2 ** 50],
      ['exbi', '1Ei', 2 ** 60],
      ['a lower-case exponent', '1e3', 1000],
      ['an upper-case exponent', '1E3', 1000],
      ['a negative exponent', '1e-3', 0.001],
    ];
    for (const [description, text, value] of cases) {
      it(`reads ${description}: ${text} = ${value}`, () => {
        assert.equal(parseQuantity(text), value);
      });
    }

    it('compares binary and plain forms of the same amount as equal', () => {
      assert.equal(parseQuantity('1Gi'), parseQuantity('1073741824'));
      assert.equal(parseQuantity('0.5Gi'), parseQuantity('512Mi'));
    });

    it('orders 64Mi below 128Mi and 600M above 512Mi', () => {
      assert.ok((parseQuantity('64Mi') ?? NaN) < (parseQuantity('128Mi') ?? NaN));
      assert.ok((parseQuantity('600M') ?? NaN) > (parseQuantity('512Mi') ?? NaN));
    });

    for (const text of ['', 'abc', '1e', '1 Gi', '1gi', '1KiB', 'Mi', '1.2.3', '--1', '1Mi ']) {
      it(`refuses ${JSON.stringify(text)}`, () => {
        assert.equal(parseQuantity(text), undefined);
      });
    }
  });
});
