import assert from 'node:assert/strict';
import { expectValues, value } from './run-cel.js';

describe('cel format library', () => {
  it('validates Kubernetes names: none when valid, the reasons otherwise', () => {
    expectValues([
      ["format.dns1123Label().validate('my-name').hasValue()", false],
      ["format.dns1123Label().validate('My_Name').hasValue()", true],
      ["format.dns1123Subdomain().validate('example.com').hasValue()", false],
      ["format.dns1035Label().validate('1abc').hasValue()", true],
      ["format.qualifiedName().validate('example.com/MyName').hasValue()", false],
      ["format.qualifiedName().validate('a/b/c').hasValue()", true],
      ["format.labelValue().validate('').hasValue()", false],
      ["format.labelValue().validate('-x').hasValue()", true],
      ["format.dns1123LabelPrefix().validate('web-').hasValue()", false],
      ["format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()", false],
      ["format.date().validate('2024-02-30').hasValue()", true],
      ["format.datetime().validate('2024-02-03T04:05:06Z').hasValue()", false],
      ["format.byte().validate('aGk=').hasValue()", false],
      ["format.uri().validate('https://example.com').hasValue()", false],
    ]);
    const reasons = value(`format.dns1123Label().validate('${'x'.repeat(64)}_')`) as { value(): string[] };
    assert.equal(reasons.value().length, 2);
    assert.match(reasons.value()[0] ?? '', /must be no more than 63 characters/);
  });

  it('finds a format by name, none for an unknown name', () => {
    expectValues([
      ["format.named('labelValue').hasValue()", true],
      ["format.named('labelValue').value().validate('ok').hasValue()", false],
      ["format.named('nope').hasValue()", false],
    ]);
  });
});

describe('cel optional types', () => {
  it('reads a field that may be missing with .? and orValue, and optional indexes with [?]', () => {
    const object = { spec: { containers: [{ name: 'a' }] } };
    expectValues(
      [
        ['object.spec.?initContainers.orValue([]).size()', 0n],
        ['object.spec.?containers.hasValue()', true],
        ['object.spec.containers[0].?securityContext.?privileged.orValue(false)', false],
        ['object.spec.containers[?5].hasValue()', false],
        ["object.?metadata.?name.or(optional.of('x')).value()", 'x'],
        ['optional.none().hasValue()', false],
        ['optional.of(1).value()', 1n],
        ['optional.ofNonZeroValue(0).hasValue()', false],
        ["optional.ofNonZeroValue('').hasValue()", false],
        ['optional.ofNonZeroValue([1]).hasValue()', true],
        ['optional.of(1) == optional.of(1)', true],
        ['optional.of(1) == optional.none()', false],
      ],
      { object },
    );
  });
});
