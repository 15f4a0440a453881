/**
 * One case of a test file: its request, given whole (`request`, as the apiserver sends it, checked as the
 * webhook checks one) or made from an object as the apiserver would make it (`object` or `objectFile`, with
 * `operation`, `oldObject`, `namespace`, `userInfo`, …: admission/request-for-object.ts), the route it is
 * reviewed on, its namespace's labels and what it expects.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { decodeReview } from '../admission/codec.js';
import { ObjectShapeError, requestForObject } from '../admission/request-for-object.js';
import { ADMISSION_V1, type AdmissionRequest, type KubeObject, type Operation } from '../admission/types.js';
import { ConfigError, errorMessage } from '../base/errors.js';
import { DEFAULT_MAX_REQUEST_BYTES } from '../admission/codec.js';
import { readRegularFile } from '../base/regular-file.js';
import { Reader } from '../config/reader.js';
import { ROUTES } from '../http/routes.js';
import { readExpectation } from './read-expectation.js';
import type { CaseRoute, TestCase } from './suite.js';

/** What `request` says itself: given with it, these fields are refused. */
const BESIDE_OBJECT = [
  'object',
  'objectFile',
  'oldObject',
  'oldObjectFile',
  'operation',
  'subResource',
  'namespace',
  'userInfo',
  'dryRun',
  'uid',
] as const;

const FIELDS = ['name', 'request', ...BESIDE_OBJECT, 'namespaceLabels', 'route', 'expect'] as const;

const OPERATIONS: readonly Operation[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];
const ROUTE_NAMES: readonly CaseRoute[] = ['all', ...ROUTES];

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An object file: one YAML or JSON document, no larger than the webhook takes a review. */
async function readObjectFile(reader: Reader, file: string, field: string, dir: string): Promise<unknown> {
  let text: string;
  try {
    text = (await readRegularFile(path.resolve(dir, file), DEFAULT_MAX_REQUEST_BYTES)).toString('utf8');
  } catch (err) {
    return reader.fail(field, `cannot read "${file}": ${errorMessage(err)}`);
  }
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  const first = doc.errors[0];
  if (first) reader.fail(field, `"${file}" is not one YAML or JSON document: ${first.message}`);
  return doc.toJS() as unknown;
}

/** The object of `inline` or of `fileField`'s file, or undefined when neither is given. */
async function objectOf(
  reader: Reader,
  c: Record<string, unknown>,
  inlineField: 'object' | 'oldObject',
  fileField: 'objectFile' | 'oldObjectFile',
  field: string,
  dir: string,
): Promise<KubeObject | undefined> {
  if (c[inlineField] !== undefined && c[fileField] !== undefined) {
    reader.fail(`${field}.${fileField}`, `give ${inlineField} or ${fileField}, not both`);
  }
  const file = reader.string(c[fileField], `${field}.${fileField}`);
  const value = file === undefined ? c[inlineField] : await readObjectFile(reader, file, `${field}.${fileField}`, dir);
  if (value === undefined || value === null) return undefined;
  if (!isMap(value))
    reader.fail(`${field}.${file === undefined ? inlineField : fileField}`, 'expected an object', value);
  return value;
}

function userInfoOf(reader: Reader, value: unknown, field: string): AdmissionRequest['userInfo'] | undefined {
  if (value === undefined || value === null) return undefined;
  const u = reader.map(value, field, ['username', 'uid', 'groups', 'extra']);
  if (u.extra !== undefined && !isMap(u.extra))
    reader.fail(`${field}.extra`, 'expected a map of string lists', u.extra);
  const extras = Object.fromEntries(
    Object.entries(u.extra ?? {}).map(([key, values]) => [
      key,
      reader.stringList(values, `${field}.extra.${key}`) ?? [],
    ]),
  );
  const username = reader.string(u.username, `${field}.username`);
  const uid = reader.string(u.uid, `${field}.uid`);
  const groups = reader.stringList(u.groups, `${field}.groups`);
  return {
    ...(username !== undefined ? { username } : {}),
    ...(uid !== undefined ? { uid } : {}),
    ...(groups ? { groups } : {}),
    ...(u.extra !== undefined ? { extra: extras } : {}),
  };
}

/** `request`: an AdmissionRequest, checked as the webhook checks what the apiserver sends. */
function givenRequest(reader: Reader, c: Record<string, unknown>, field: string): AdmissionRequest {
  for (const key of BESIDE_OBJECT) {
    if (c[key] !== undefined)
      reader.fail(`${field}.${key}`, 'goes with object, not with request (the request says it)');
  }
  if (!isMap(c.request)) reader.fail(`${field}.request`, 'expected an AdmissionRequest', c.request);
  const request = { uid: randomUUID(), ...c.request };
  try {
    return decodeReview(JSON.stringify({ apiVersion: ADMISSION_V1, kind: 'AdmissionReview', request })).request;
  } catch (err) {
    return reader.fail(
      `${field}.request`,
      errorMessage(err)
        .replace(/^request\.?/, '')
        .trim() || 'is not usable',
    );
  }
}

/** The request the apiserver would send for the case's object and operation. */
async function madeRequest(
  reader: Reader,
  c: Record<string, unknown>,
  field: string,
  dir: string,
): Promise<AdmissionRequest> {
  const operation = reader.oneOf(c.operation, `${field}.operation`, OPERATIONS) ?? 'CREATE';
  const object = await objectOf(reader, c, 'object', 'objectFile', field, dir);
  const oldObject = await objectOf(reader, c, 'oldObject', 'oldObjectFile', field, dir);
  if (operation === 'DELETE' && object && oldObject) {
    reader.fail(`${field}.object`, 'a DELETE has no new object: give the object deleted as oldObject');
  }
  if ((operation === 'CREATE' || operation === 'CONNECT') && oldObject) {
    reader.fail(`${field}.oldObject`, `a ${operation} has no old object`);
  }
  if (operation === 'UPDATE' && !oldObject) reader.fail(`${field}.oldObject`, 'is required for an UPDATE');
  const target = operation === 'DELETE' ? (oldObject ?? object) : object;
  if (!target) reader.fail(`${field}.object`, 'is required (or objectFile, or a whole request)');
  const namespace = reader.string(c.namespace, `${field}.namespace`);
  const own = target.metadata?.namespace;
  if (namespace !== undefined && typeof own === 'string' && own !== '' && own !== namespace) {
    reader.fail(`${field}.namespace`, `"${namespace}" is not the object's metadata.namespace "${own}"`);
  }
  const userInfo = userInfoOf(reader, c.userInfo, `${field}.userInfo`);
  const dryRun = reader.boolean(c.dryRun, `${field}.dryRun`);
  const subResource = reader.string(c.subResource, `${field}.subResource`);
  const uid = reader.string(c.uid, `${field}.uid`);
  try {
    const request = requestForObject(target, {
      operation,
      ...(operation === 'UPDATE' && oldObject ? { oldObject } : {}),
      ...(namespace !== undefined ? { namespace } : {}),
      ...(userInfo ? { userInfo } : {}),
      ...(dryRun !== undefined ? { dryRun } : {}),
      ...(subResource ? { subResource } : {}),
    });
    return uid ? { ...request, uid } : request;
  } catch (err) {
    if (!(err instanceof ObjectShapeError)) throw err;
    const which = operation === 'DELETE' && oldObject ? 'oldObject' : 'object';
    throw new ConfigError(reader.file, `${field}.${which}`, err.message);
  }
}

export async function readCase(reader: Reader, value: unknown, field: string, dir: string): Promise<TestCase> {
  const c = reader.map(value, field, FIELDS, false);
  const name = reader.requiredString(c.name, `${field}.name`);
  const request = c.request !== undefined ? givenRequest(reader, c, field) : await madeRequest(reader, c, field, dir);
  const namespaceLabels = reader.stringMap(c.namespaceLabels, `${field}.namespaceLabels`);
  return {
    name,
    field,
    request,
    route: reader.oneOf(c.route, `${field}.route`, ROUTE_NAMES) ?? 'all',
    ...(namespaceLabels ? { namespaceLabels } : {}),
    expect: readExpectation(reader, c.expect, `${field}.expect`, request.operation),
  };
}
