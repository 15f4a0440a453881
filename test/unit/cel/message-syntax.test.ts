import assert from 'node:assert/strict';
import { activation, compile, createCostBudget, evaluate, toJson } from '../../../server/cel/index.js';
import { rewriteMessages } from '../../../server/cel/message-syntax.js';

/** The JSON value of `expression` compiled with the constructions of `messages`, on an empty object. */
function valueOf(expression: string, messages: 'jsonPatch' | 'applyConfiguration' = 'applyConfiguration'): unknown {
  const compiled = compile(expression, { messages });
  if (!compiled.ok) return assert.fail(compiled.error.message);
  const result = evaluate(compiled.program, activation({ object: { spec: { n: 2 } } }), createCostBudget());
  return result.ok ? toJson(result.value) : assert.fail(result.message);
}

describe('message construction in CEL (Type{field: value})', () => {
  it('builds nested objects whose fields have different types', () => {
    assert.deepEqual(
      valueOf(
        'Object{spec: Object.spec{replicas: object.spec.n * 2, paused: false, template: Object.spec.template{}}}',
      ),
      { spec: { replicas: 4, paused: false, template: {} } },
    );
  });

  it('builds a list of JSONPatch values, with from and a trailing comma', () => {
    assert.deepEqual(
      valueOf('[JSONPatch{op: "move", from: "/a", path: "/b",}, JSONPatch{op: "remove", path: "/c"}]', 'jsonPatch'),
      [
        { op: 'move', from: '/a', path: '/b' },
        { op: 'remove', path: '/c' },
      ],
    );
  });

  it('sets an optional field (?name:) when its optional has a value, and leaves it out when it has none', () => {
    assert.deepEqual(
      valueOf(
        'Object{spec: Object.spec{?replicas: object.spec.?n, ?paused: object.spec.?paused, template: Object.spec.template{?x: optional.none()}}}',
      ),
      { spec: { replicas: 2, template: {} } },
    );
    assert.deepEqual(valueOf('Object{?metadata: optional.of(Object.metadata{name: "a"})}'), {
      metadata: { name: 'a' },
    });
  });

  it('leaves strings, raw and triple-quoted ones, and comments as they are', () => {
    assert.deepEqual(
      valueOf(
        String.raw`Object{metadata: Object.metadata{annotations: {"a": "Object{x: 1}", "b": r'Object{\d', "c": """T{"""}}} // Object{y: 2}`,
      ),
      { metadata: { annotations: { a: 'Object{x: 1}', b: 'Object{\\d', c: 'T{' } } },
    );
  });

  it('gives back text without a construction unchanged', () => {
    const text = '{"a": object.spec.n} // Object{';
    const rewritten = rewriteMessages(text, 'applyConfiguration');
    assert.ok(rewritten.ok);
    assert.equal(rewritten.text, text);
  });

  it('maps every offset of the rewritten text back to where the user wrote it', () => {
    const text = 'Object{spec: Object.spec{replicas: 1}}';
    const rewritten = rewriteMessages(text, 'applyConfiguration');
    assert.ok(rewritten.ok);
    const one = rewritten.text.indexOf('1');
    assert.equal(rewritten.originOf(one), text.indexOf('1'));
    assert.equal(rewritten.originOf(rewritten.text.indexOf('"replicas"')), text.indexOf('replicas'));
  });

  it("reports an evaluation error at its place in the user's text", () => {
    const compiled = compile('Object{spec: Object.spec{\n  replicas: object.missing}}', {
      messages: 'applyConfiguration',
    });
    assert.ok(compiled.ok);
    const result = evaluate(compiled.program, activation({ object: {} }), createCostBudget());
    assert.deepEqual(result.ok ? undefined : [result.code, result.position?.line, result.position?.column], [
      'no_such_key',
      2,
      20,
    ]);
  });

  const refused: readonly [string, string, 'jsonPatch' | 'applyConfiguration', string, number][] = [
    ['an optional JSONPatch field', 'JSONPatch{?op: optional.none()}', 'jsonPatch', 'expected a field name', 11],
    ['a field set twice', 'Object{spec: {}, spec: {}}', 'applyConfiguration', 'field "spec" is set twice', 18],
    ['a type other than Object', 'Pod{spec: {}}', 'applyConfiguration', 'unknown type "Pod"', 1],
    ['JSONPatch outside a JSON patch', 'JSONPatch{op: "add"}', 'applyConfiguration', 'unknown type "JSONPatch"', 1],
    ['a field of another type', 'Object{spec: Object.metadata{}}', 'applyConfiguration', 'type mismatch', 14],
    [
      'a list item of another type',
      'Object{spec: Object.spec{containers: [Object.spec.containers{}, Object.spec.volumes{}]}}',
      'applyConfiguration',
      'type mismatch',
      65,
    ],
  ];
  for (const [name, expression, messages, message, column] of refused) {
    it(`refuses ${name} when it compiles, with the column`, () => {
      const compiled = compile(expression, { messages });
      assert.ok(!compiled.ok);
      assert.ok(compiled.error.message.includes(message), compiled.error.message);
      assert.equal(compiled.error.position.column, column);
    });
  }

  it('is not read without `messages`: a construction stays a parse error, as before', () => {
    const compiled = compile('Object{spec: 1}');
    assert.equal(compiled.ok ? 'compiled' : compiled.error.code, 'parse_error');
  });

  it('jsonpatch.escapeKey() escapes ~ before /, as RFC 6901', () => {
    assert.equal(valueOf('jsonpatch.escapeKey("a~1/b")'), 'a~01~1b');
  });
});
