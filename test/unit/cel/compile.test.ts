import assert from 'node:assert/strict';
import { compile, MAX_EXPRESSION_LENGTH } from '../../../server/cel/index.js';
import { compileError } from './run-cel.js';

describe('cel compile()', () => {
  it('gives the checked result type of an expression that compiles', () => {
    const compiled = compile("object.metadata.name.startsWith('web-')");
    assert.ok(compiled.ok);
    assert.equal(compiled.program.resultType, 'bool');
    const dynamic = compile('object.spec.replicas');
    assert.ok(dynamic.ok);
    assert.equal(dynamic.program.resultType, 'dyn');
  });

  it('names the line and column of a syntax error inside the expression', () => {
    const error = compileError("object.spec.containers.all(c,\n  c.name == 'a' &&)");
    assert.equal(error.code, 'parse_error');
    assert.deepEqual({ line: error.position.line, column: error.position.column }, { line: 2, column: 19 });
  });

  it('refuses type errors it can see: an operator on the wrong types, an unknown function or variable', () => {
    assert.equal(compileError("1 + 'a'").code, 'type_error');
    const unknown = compileError('object.spec.containers.all(c, c.name.shout())');
    assert.match(unknown.message, /no matching overload for 'dyn\.shout\(\)'/);
    assert.deepEqual([unknown.position.line, unknown.position.column], [1, 31]);
    assert.match(compileError('obj.spec').message, /Unknown variable: obj/);
  });

  it('declares only the variables asked for', () => {
    assert.match(
      compileError('params.limit > 1', { declarations: ['object', 'oldObject', 'request', 'namespaceObject'] }).message,
      /Unknown variable: params/,
    );
    assert.ok(compile("namespaceObject.metadata.name == 'x'", { declarations: ['namespaceObject'] }).ok);
  });

  it("knows the names of a policy's variables, and refuses any other", () => {
    assert.ok(compile('variables.containers.size() > 0', { variables: ['containers'] }).ok);
    const error = compileError('variables.contaners.size() > 0', { variables: ['containers'] });
    assert.match(error.message, /No such key: contaners/);
    assert.match(compileError('variables.x', {}).message, /Unknown variable: variables/);
  });

  it('refuses at compile time a function the apiserver has and this gateway has not, by name', () => {
    const twoVar = compileError('object.metadata.labels.all(k, v, v != "")');
    assert.equal(twoVar.code, 'unavailable_function');
    assert.match(twoVar.message, /^function "all" is not available: two-variable comprehensions/);
    assert.equal(compileError('object.spec.containers.transformList(i, c, c.name)').code, 'unavailable_function');
    assert.equal(compileError('[3, 1].sortBy(x, x)').code, 'unavailable_function');
    const authz = compileError("authorizer.group('apps').resource('deployments').check('get').allowed()");
    assert.equal(authz.code, 'unavailable_variable');
    assert.match(authz.message, /authorizer/);
  });

  it('refuses a regular expression literal that RE2 cannot compile, where it is', () => {
    const error = compileError("object.metadata.name.matches('(a')");
    assert.equal(error.code, 'invalid_regex');
    assert.equal(error.position.column, 30);
    assert.equal(compileError("'x'.find('a(?=b)')").code, 'invalid_regex');
  });

  it('checks the result type when one is asked for', () => {
    assert.equal(compileError("object.metadata.name + '!'", { resultType: 'bool' }).code, 'wrong_result_type');
    assert.ok(compile('object.spec.hostNetwork', { resultType: 'bool' }).ok, 'dyn is only known at review time');
  });

  it('refuses an expression longer than the parser limit', () => {
    assert.equal(compileError(`'${'a'.repeat(MAX_EXPRESSION_LENGTH)}'`).code, 'too_long');
  });

  it('refuses mixed-type list literals, as the apiserver (homogeneous aggregate literals) does', () => {
    assert.equal(compileError("[1, 'a']").code, 'type_error');
    assert.ok(compile("[dyn(1), dyn('a')]").ok);
  });
});
