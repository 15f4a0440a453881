import assert from 'node:assert/strict';
import { configError, parseConfig } from '../../helpers/config.js';

const MATCH =
  "    match: { rules: [ { operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] } ] }\n";

/** A policy entry with `body` (indented four spaces) after its match. */
const policy = (body: string): string => `chain:\n  - policy: p\n${MATCH}${body}`;

describe('a policy chain entry', () => {
  it('is read with its defaults and every expression compiled', () => {
    const config = parseConfig(
      policy(
        '    matchConditions: [{ name: ns, expression: "request.namespace != \'kube-system\'" }]\n' +
          '    variables: [{ name: n, expression: size(object.spec.containers) }]\n' +
          '    validations: [{ expression: variables.n < 10, message: too many }]\n' +
          '    auditAnnotations: [{ key: count, valueExpression: string(variables.n) }]\n',
      ),
    );
    const [entry] = config.chain;
    assert.ok(entry?.kind === 'policy');
    assert.equal(entry.name, 'p');
    assert.equal(entry.order, 10);
    assert.deepEqual(
      {
        matchConditions: entry.matchConditions?.map((c) => [c.name, c.program.expression]),
        variables: entry.spec.variables.map((v) => [v.name, v.program.expression]),
        validations: entry.spec.validations.map((v) => [v.program.expression, v.message, v.reason]),
        auditAnnotations: entry.spec.auditAnnotations.map((a) => [a.key, a.program.expression]),
      },
      {
        matchConditions: [['ns', "request.namespace != 'kube-system'"]],
        variables: [['n', 'size(object.spec.containers)']],
        validations: [['variables.n < 10', 'too many', 'Invalid']],
        auditAnnotations: [['count', 'string(variables.n)']],
      },
    );
  });

  const invalid: readonly [string, string, string][] = [
    [
      'a parse error, at its line and the column in the expression',
      policy('    validations:\n      - expression: object.spec.containers.all(c,\n'),
      'gateway.yaml:5:9: chain[0].validations[0].expression: Unexpected token: EOF (at column 30 of the expression)',
    ],
    [
      'an unknown variable in a validation',
      policy('    validations:\n      - expression: variables.missing == 1\n'),
      'gateway.yaml:5:9: chain[0].validations[0].expression: No such key: missing (at column 11 of the expression)',
    ],
    [
      'a validation that does not give a bool, with the column',
      policy("    validations:\n      - expression: \"'a' + 'b'\"\n"),
      'gateway.yaml:5:9: chain[0].validations[0].expression: the expression gives string, where bool is expected (at column 1 of the expression)',
    ],
    [
      'a messageExpression that does not give a string',
      policy('    validations:\n      - expression: "true"\n        messageExpression: "1 + 2"\n'),
      'gateway.yaml:6:9: chain[0].validations[0].messageExpression: the expression gives int, where string is expected (at column 1 of the expression)',
    ],
    [
      'a variable that reads one defined after it',
      policy(
        '    variables:\n      - { name: a, expression: variables.b }\n      - { name: b, expression: "1" }\n    validations: [{ expression: "true" }]\n',
      ),
      'gateway.yaml:5:20: chain[0].variables[0].expression: No such key: b (at column 11 of the expression)',
    ],
    [
      'a matchCondition that reads variables',
      policy(
        '    variables: [{ name: a, expression: "true" }]\n    matchConditions: [{ name: m, expression: variables.a }]\n    validations: [{ expression: "true" }]\n',
      ),
      'gateway.yaml:5:34: chain[0].matchConditions[0].expression: Unknown variable: variables (at column 1 of the expression)',
    ],
    [
      'a function the apiserver has and the gateway has not',
      policy('    validations:\n      - expression: "object.metadata.labels.all(k, v, v != \'\')"\n'),
      'gateway.yaml:5:9: chain[0].validations[0].expression: function "all" is not available: two-variable comprehensions (Kubernetes 1.32) are not supported by this CEL engine (at column 1 of the expression)',
    ],
    [
      'more than 64 matchConditions',
      policy(
        `    matchConditions: [${Array.from({ length: 65 }, (_, i) => `{ name: m${i}, expression: "true" }`).join(', ')}]\n    validations: [{ expression: "true" }]\n`,
      ),
      'gateway.yaml:4:5: chain[0].matchConditions: expected at most 64 items, got 65',
    ],
    [
      'two matchConditions of one name',
      policy(
        '    matchConditions: [{ name: m, expression: "true" }, { name: m, expression: "true" }]\n    validations: [{ expression: "true" }]\n',
      ),
      'gateway.yaml:4:58: chain[0].matchConditions[1].name: the name "m" is already used in this list',
    ],
    [
      'a variable named constructor, which the CEL engine would read as the type of `variables`',
      policy('    variables: [{ name: constructor, expression: "1" }]\n    validations: [{ expression: "true" }]\n'),
      'gateway.yaml:4:19: chain[0].variables[0].name: the name "constructor" is not supported here (the CEL engine takes it for the type of `variables`); choose another',
    ],
    [
      'a variable name that is not a CEL identifier',
      policy('    variables: [{ name: my-var, expression: "1" }]\n    validations: [{ expression: "true" }]\n'),
      'gateway.yaml:4:19: chain[0].variables[0].name: expected a CEL identifier (letters, digits, _), got "my-var"',
    ],
    [
      'a reason the apiserver does not have',
      policy('    validations: [{ expression: "true", reason: NotFound }]\n'),
      'gateway.yaml:4:41: chain[0].validations[0].reason: expected one of Unauthorized, Forbidden, Invalid, RequestEntityTooLarge, got "NotFound"',
    ],
    [
      'a message with a line break',
      policy('    validations: [{ expression: "true", message: "a\\nb" }]\n'),
      'gateway.yaml:4:41: chain[0].validations[0].message: expected a message without line breaks',
    ],
    [
      'a mutation without the expression its patchType needs',
      policy('    mutations: [{ patchType: JSONPatch }]\n'),
      'gateway.yaml:4:17: chain[0].mutations[0].jsonPatch: is required with patchType JSONPatch',
    ],
    [
      'a mutation with both kinds of expression',
      policy(
        '    mutations: [{ patchType: ApplyConfiguration, applyConfiguration: { expression: "Object{}" }, jsonPatch: { expression: "[]" } }]\n',
      ),
      'gateway.yaml:4:98: chain[0].mutations[0].jsonPatch: not allowed with patchType ApplyConfiguration',
    ],
    [
      'a mistake inside a construction, at its line and column in the expression',
      policy(
        '    mutations:\n      - patchType: ApplyConfiguration\n        applyConfiguration:\n          expression: |\n            Object{spec: Object.spec{\n              replicas: missing}}\n',
      ),
      'gateway.yaml:7:11: chain[0].mutations[0].applyConfiguration.expression: Unknown variable: missing (at line 2, column 13 of the expression)',
    ],
    [
      'a JSONPatch construction in an apply configuration',
      policy(
        '    mutations: [{ patchType: ApplyConfiguration, applyConfiguration: { expression: "[JSONPatch{op: \'add\'}]" } }]\n',
      ),
      'gateway.yaml:4:72: chain[0].mutations[0].applyConfiguration.expression: unknown type "JSONPatch" in a construction: expected Object or Object.<field>… (at column 2 of the expression)',
    ],
    [
      'a JSONPatch field the type does not have',
      policy(
        "    mutations: [{ patchType: JSONPatch, jsonPatch: { expression: \"[JSONPatch{op: 'add', pat: '/x'}]\" } }]\n",
      ),
      'gateway.yaml:4:54: chain[0].mutations[0].jsonPatch.expression: JSONPatch has no field "pat" (op, path, from, value) (at column 23 of the expression)',
    ],
    [
      "a construction whose type is not its field's",
      policy(
        '    mutations: [{ patchType: ApplyConfiguration, applyConfiguration: { expression: "Object{spec: Object.spec{selector: Object.spec.wrong{}}}" } }]\n',
      ),
      'gateway.yaml:4:72: chain[0].mutations[0].applyConfiguration.expression: type mismatch: "Object.spec.wrong" set as a field of type "Object.spec.selector" (at column 36 of the expression)',
    ],
    [
      'an unknown patchType',
      policy('    mutations: [{ patchType: StrategicMerge }]\n'),
      'gateway.yaml:4:19: chain[0].mutations[0].patchType: expected one of JSONPatch, ApplyConfiguration, got "StrategicMerge"',
    ],
    [
      'reinvocationPolicy on a policy without mutations',
      policy('    reinvocationPolicy: IfNeeded\n    validations: [{ expression: "true" }]\n'),
      'gateway.yaml:4:5: chain[0].reinvocationPolicy: unknown field',
    ],
    [
      'a policy without validations, auditAnnotations or mutations',
      policy('    variables: [{ name: a, expression: "1" }]\n'),
      'gateway.yaml:2:5: chain[0]: expected validations, auditAnnotations or mutations',
    ],
    [
      'a policy without match',
      'chain:\n  - policy: p\n    validations: [{ expression: "true" }]\n',
      'gateway.yaml:2:5: chain[0].match: is required',
    ],
    [
      'settings on a policy',
      policy('    settings: {}\n    validations: [{ expression: "true" }]\n'),
      'gateway.yaml:4:5: chain[0].settings: unknown field (known: policy, variables, validations, auditAnnotations, mutations, name, match, failurePolicy, timeoutSeconds, mode, shadow, attach, conflictGroup, matchConditions)',
    ],
    [
      'an entry that is both a plugin and a policy',
      'chain:\n  - { policy: p, plugin: q }\n',
      'gateway.yaml:2:5: chain[0]: expected exactly one of plugin',
    ],
    [
      'a misspelt policy key',
      'chain:\n  - polcy: p\n',
      'gateway.yaml:2:5: chain[0].polcy: unknown field (did you mean "policy"?)',
    ],
  ];
  for (const [name, yaml, message] of invalid) {
    it(`refuses ${name}, naming the field`, () => {
      const got = configError(yaml);
      assert.ok(got.startsWith(message), `got: ${got}`);
    });
  }
});
