import type { Filter as Ast } from 'scim2-parse-filter';
import { scimErrors } from './errors';
import { matchesElement, parseFilter } from './filter';
import { findExtension, isObject, normalizeValue, type Doc, type ResourceSchema } from './resource';
import { findAttribute, PATCH_SCHEMA, type Attribute } from './schemas';

export interface PatchOperation {
  op: 'add' | 'replace' | 'remove';
  path?: string;
  value?: unknown;
}

export const MAX_OPERATIONS = 1000;

/** Reads a PatchOp body; `op` in any case ("Replace", as Entra ID sends it). */
export function readPatchBody(body: unknown): PatchOperation[] {
  if (!isObject(body)) throw scimErrors.invalidSyntax('The request body must be a JSON object');
  const schemas = Object.entries(body).find(([k]) => k.toLowerCase() === 'schemas')?.[1];
  if (
    schemas !== undefined &&
    (!Array.isArray(schemas) ||
      !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === PATCH_SCHEMA.toLowerCase()))
  ) {
    throw scimErrors.invalidSyntax(`"schemas" must contain ${PATCH_SCHEMA}`);
  }
  const operations = Object.entries(body).find(([k]) => k.toLowerCase() === 'operations')?.[1];
  if (!Array.isArray(operations) || operations.length === 0)
    throw scimErrors.invalidSyntax('"Operations" must be a non-empty array');
  if (operations.length > MAX_OPERATIONS)
    throw scimErrors.invalidSyntax(`At most ${MAX_OPERATIONS} operations per request`);
  return operations.map((raw, i) => {
    if (!isObject(raw)) throw scimErrors.invalidSyntax(`Operations[${i}] must be an object`);
    const get = (name: string) => Object.entries(raw).find(([k]) => k.toLowerCase() === name)?.[1];
    const op = get('op');
    if (typeof op !== 'string' || !/^(add|replace|remove)$/i.test(op))
      throw scimErrors.invalidSyntax(`Operations[${i}].op must be add, replace or remove`);
    const path = get('path');
    if (path !== undefined && path !== null && (typeof path !== 'string' || path.trim() === ''))
      throw scimErrors.invalidPath(`Operations[${i}].path must be a non-empty string`);
    const value = get('value');
    const operation: PatchOperation = {
      op: op.toLowerCase() as PatchOperation['op'],
      ...(typeof path === 'string' ? { path: path.trim() } : {}),
      ...(value !== undefined ? { value } : {}),
    };
    if (operation.op !== 'remove' && value === undefined)
      throw scimErrors.invalidValue(`Operations[${i}] (${operation.op}) needs a value`);
    if (operation.op === 'remove' && !operation.path)
      throw scimErrors.noTarget(`Operations[${i}] (remove) needs a path`);
    return operation;
  });
}

interface ParsedPath {
  /** The attribute's container: the resource, or an extension object's key on it. */
  extension?: string;
  attribute: Attribute;
  filter?: Ast;
  sub?: Attribute;
}

/** Parses attrPath[valFilter].sub, URN-prefixed forms included (RFC 7644 §3.5.2 PATH grammar). */
function parsePath(path: string, schema: ResourceSchema): ParsedPath | { extensionOnly: string } {
  let rest = path;
  let extension: string | undefined;
  const corePrefix = `${schema.core.toLowerCase()}:`;
  if (rest.toLowerCase().startsWith(corePrefix)) rest = rest.slice(corePrefix.length);
  else {
    const whole = findExtension(schema, rest);
    if (whole) return { extensionOnly: whole };
    for (const urn of Object.keys(schema.extensions)) {
      if (rest.toLowerCase().startsWith(`${urn.toLowerCase()}:`)) {
        extension = urn;
        rest = rest.slice(urn.length + 1);
        break;
      }
    }
  }
  const match = /^([A-Za-z$][\w$-]*)(?:\[(.*)\])?(?:\.([A-Za-z$][\w$-]*))?$/s.exec(rest);
  if (!match) throw scimErrors.invalidPath(`"${path}" is not a valid attribute path`);
  const [, name, filterText, subName] = match;
  let attribute = findAttribute(
    extension ? schema.extensions[extension]! : [...schema.attributes, ...schema.common],
    name!,
  );
  if (!attribute && !extension && name!.includes('.') === false && subName === undefined) attribute = undefined;
  if (!attribute) throw scimErrors.invalidPath(`"${path}" names no attribute of this resource`);
  const parsed: ParsedPath = { ...(extension ? { extension } : {}), attribute };
  if (filterText !== undefined) {
    if (!attribute.multiValued) throw scimErrors.invalidPath(`"${name}" is not multi-valued, so it takes no filter`);
    parsed.filter = parseFilter(filterText);
  }
  if (subName !== undefined) {
    const sub = findAttribute(attribute.subAttributes ?? [], subName);
    if (!sub) throw scimErrors.invalidPath(`"${path}" names no sub-attribute of ${attribute.name}`);
    parsed.sub = sub;
  }
  return parsed;
}

/**
 * Applies PATCH operations (RFC 7644 §3.5.2) to a copy of `current`, all or nothing, with what Entra ID and Okta
 * really send: no-path values with dotted or URN-prefixed keys, value-filter paths that create the element they
 * select when it is missing, removal of members by a value array, and read-only attributes echoed unchanged.
 */
export function applyPatch(current: Doc, operations: PatchOperation[], schema: ResourceSchema, id: string): Doc {
  const doc = structuredClone(current);
  for (const operation of operations) {
    for (const [path, value] of targetsOf(operation)) applyAtPath(doc, operation.op, path, value, schema, id);
  }
  return doc;
}

type Op = PatchOperation['op'];

/** An operation's (path, value) pairs: its own path, or each key of a value sent without one (Entra ID, Okta). */
function targetsOf(operation: PatchOperation): [string, unknown][] {
  if (operation.path) return [[operation.path, operation.value]];
  if (!isObject(operation.value))
    throw scimErrors.invalidValue(`A ${operation.op} without a path needs an object value`);
  return Object.entries(operation.value).filter(([key]) => !['schemas', 'meta'].includes(key.toLowerCase()));
}

/** One operation on one path: finds what the path names and hands it to the function for that kind of value. */
function applyAtPath(doc: Doc, op: Op, path: string, value: unknown, schema: ResourceSchema, id: string): void {
  if (path.toLowerCase() === 'id') return keepId(op, value, id);
  const parsed = parsePath(path, schema);
  if ('extensionOnly' in parsed) return applyToExtension(doc, op, parsed.extensionOnly, value, schema, id);
  const { attribute, filter, sub } = parsed;
  if (attribute.mutability === 'readOnly') throw scimErrors.mutability(`"${attribute.name}" is read-only`);
  const container = parsed.extension
    ? ((doc[parsed.extension] as Doc | undefined) ?? (doc[parsed.extension] = {}))
    : doc;
  const label = `${parsed.extension ? `${parsed.extension}:` : ''}${attribute.name}`;

  if (!attribute.multiValued) {
    if (sub) patchSubAttribute(container, attribute, sub, op, value, label);
    else if (op === 'remove') delete container[attribute.name];
    else setSingleValue(container, attribute, value, label);
  } else {
    const existing = Array.isArray(container[attribute.name]) ? [...(container[attribute.name] as Doc[])] : [];
    const target: MultiTarget = { attribute, label, path };
    let result: Doc[];
    if (filter) result = patchSelected(existing, filter, sub, op, value, target);
    else if (sub)
      result = op === 'remove' ? removeSubEverywhere(existing, sub) : setSubEverywhere(existing, sub, value, label);
    else if (op === 'remove') result = removeValues(existing, value, target);
    else if (op === 'replace') result = (normalizeValue(attribute, value, label) as Doc[] | undefined) ?? [];
    else result = addValues(existing, value, target);
    result = onePrimary(result);
    if (result.length) container[attribute.name] = result;
    else delete container[attribute.name];
  }
  if (parsed.extension && Object.keys(container).length === 0) delete doc[parsed.extension];
}

/** Okta echoes the id in replace values; only a different id (or removing it) is an attempt to change it. */
function keepId(op: Op, value: unknown, id: string): void {
  if (op !== 'remove' && String(value) === id) return;
  throw scimErrors.mutability('"id" cannot be changed');
}

/** A whole extension as the path (or a URN key of a no-path value): its attributes one by one. */
function applyToExtension(doc: Doc, op: Op, urn: string, value: unknown, schema: ResourceSchema, id: string): void {
  if (op === 'remove') {
    delete doc[urn];
    return;
  }
  if (!isObject(value)) throw scimErrors.invalidValue(`The value for ${urn} must be an object`);
  // The extension object may carry its own "schemas" (scim2-models sends it): not an attribute.
  for (const [key, subValue] of Object.entries(value)) {
    if (key.toLowerCase() !== 'schemas') applyAtPath(doc, op, `${urn}:${key}`, subValue, schema, id);
  }
}

/** add / replace of a single-valued attribute; a complex value keeps the sub-attributes it does not name. */
function setSingleValue(container: Doc, attribute: Attribute, value: unknown, label: string): void {
  const normalized = normalizeValue(attribute, value, label);
  if (normalized === undefined) delete container[attribute.name];
  else if (attribute.type === 'complex' && isObject(container[attribute.name]) && isObject(normalized)) {
    // RFC 7644 §3.5.2.3: sub-attributes not in the value are left unchanged.
    container[attribute.name] = { ...(container[attribute.name] as Doc), ...normalized };
  } else container[attribute.name] = normalized;
}

/** `name.givenName`: one sub-attribute of a single-valued complex attribute, which disappears when emptied. */
function patchSubAttribute(
  container: Doc,
  attribute: Attribute,
  sub: Attribute,
  op: Op,
  value: unknown,
  label: string,
): void {
  const parent = isObject(container[attribute.name]) ? (container[attribute.name] as Doc) : {};
  const normalized = op === 'remove' ? undefined : normalizeValue(sub, value, `${label}.${sub.name}`);
  if (normalized === undefined) delete parent[sub.name];
  else parent[sub.name] = normalized;
  if (Object.keys(parent).length) container[attribute.name] = parent;
  else delete container[attribute.name];
}

/** A multi-valued attribute being patched: what error messages and normalisation need. */
interface MultiTarget {
  attribute: Attribute;
  label: string;
  path: string;
}

function caseExactOf(attribute: Attribute): (sub: string) => boolean {
  return (name) => findAttribute(attribute.subAttributes ?? [], name)?.caseExact ?? false;
}

/** Two elements with the same `value` (compared as the attribute's case rule says) are one value. */
function sameValue(attribute: Attribute, a: Doc, b: Doc): boolean {
  const x = a.value;
  const y = b.value;
  if (typeof x !== 'string' || typeof y !== 'string') return false;
  return caseExactOf(attribute)('value') ? x === y : x.toLowerCase() === y.toLowerCase();
}

/** add without a filter: new values are appended; a value already present is updated, not duplicated. */
function addValues(existing: Doc[], value: unknown, { attribute, label }: MultiTarget): Doc[] {
  const result = [...existing];
  for (const item of (normalizeValue(attribute, value, label) as Doc[] | undefined) ?? []) {
    const index = result.findIndex((e) => sameValue(attribute, e, item));
    if (index >= 0) result[index] = { ...result[index], ...item };
    else result.push(item);
  }
  return result;
}

/** remove without a filter: all values, or only those listed (Entra ID removes members by listing them). */
function removeValues(existing: Doc[], value: unknown, { attribute, label }: MultiTarget): Doc[] {
  if (value === undefined || value === null) return [];
  const victims = (normalizeValue(attribute, value, label) as Doc[] | undefined) ?? [];
  return existing.filter((e) => !victims.some((v) => sameValue(attribute, e, v)));
}

/** `emails.value` without a filter: that sub-attribute of every element. */
function setSubEverywhere(existing: Doc[], sub: Attribute, value: unknown, label: string): Doc[] {
  return existing.map((e) => ({ ...e, [sub.name]: normalizeValue(sub, value, `${label}.${sub.name}`) }));
}

function removeSubEverywhere(existing: Doc[], sub: Attribute): Doc[] {
  return existing.map((e) => withoutKey(e, sub.name));
}

/** `emails[type eq "work"]` (optionally `.value`): the elements the filter selects. */
function patchSelected(
  existing: Doc[],
  filter: Ast,
  sub: Attribute | undefined,
  op: Op,
  value: unknown,
  target: MultiTarget,
): Doc[] {
  const selected = existing.filter((e) => matchesElement(e, filter, caseExactOf(target.attribute)));
  if (op === 'remove') return removeSelected(existing, selected, sub);
  if (selected.length === 0) return [...existing, ...createSelected(filter, sub, value, target)];
  return existing.map((e) => (selected.includes(e) ? updateSelected(e, sub, op, value, target) : e));
}

/** Removes the selected elements, or their sub-attribute (an element left with only type / primary goes too). */
function removeSelected(existing: Doc[], selected: Doc[], sub: Attribute | undefined): Doc[] {
  if (!sub) return existing.filter((e) => !selected.includes(e));
  return existing
    .map((e) => (selected.includes(e) ? withoutKey(e, sub.name) : e))
    .filter((e) => Object.keys(e).some((k) => k !== 'type' && k !== 'primary'));
}

/** Entra ID replaces emails[type eq "work"].value on users without a work address: the element is created. */
function createSelected(filter: Ast, sub: Attribute | undefined, value: unknown, target: MultiTarget): Doc[] {
  const seed = elementFromFilter(filter);
  if (!seed) throw scimErrors.noTarget(`No value of "${target.attribute.name}" matches the filter in "${target.path}"`);
  const element = sub ? { ...seed, [sub.name]: value } : isObject(value) ? { ...seed, ...value } : undefined;
  if (!element) throw scimErrors.invalidValue(`The value for "${target.path}" must be an object`);
  return (normalizeValue(target.attribute, [element], target.label) as Doc[] | undefined) ?? [];
}

/** One selected element: its sub-attribute set, or the element replaced (replace) or merged into (add). */
function updateSelected(element: Doc, sub: Attribute | undefined, op: Op, value: unknown, target: MultiTarget): Doc {
  if (sub) {
    const normalized = normalizeValue(sub, value, `${target.label}.${sub.name}`);
    return normalized === undefined ? withoutKey(element, sub.name) : { ...element, [sub.name]: normalized };
  }
  const replacement = (normalizeValue(target.attribute, [value], target.label) as Doc[] | undefined)?.[0];
  if (!replacement) return element;
  return op === 'add' ? { ...element, ...replacement } : replacement;
}

/** A new primary value demotes the others (RFC 7643 §2.4): the last one marked primary stays primary. */
function onePrimary(values: Doc[]): Doc[] {
  const primaries = values.filter((e) => e.primary === true);
  if (primaries.length <= 1) return values;
  const keep = primaries[primaries.length - 1];
  return values.map((e) => (e.primary === true && e !== keep ? { ...e, primary: false } : e));
}

function withoutKey(element: Doc, key: string): Doc {
  const { [key]: _removed, ...rest } = element;
  return rest;
}

/** {type: "work"} from `type eq "work"` (and conjunctions of eq): the element a filter path describes. */
function elementFromFilter(filter: Ast): Doc | undefined {
  if (filter.op === 'eq') return { [filter.attrPath.split('.').pop()!]: filter.compValue };
  if (filter.op === 'and') {
    const parts = filter.filters.map(elementFromFilter);
    if (parts.some((p) => !p)) return undefined;
    return Object.assign({}, ...parts);
  }
  return undefined;
}
