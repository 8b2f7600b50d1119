import type { Filter as Ast } from 'scim2-parse-filter';
import { scimErrors } from './errors';
import { matchesElement, parseFilter } from './filter';
import { findExtension, isObject, normalizeValue, type Doc, type ResourceSchema } from './resource';
import { COMMON_ATTRIBUTES, findAttribute, PATCH_SCHEMA, type Attribute } from './schemas';

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
    extension ? schema.extensions[extension]! : [...schema.attributes, ...COMMON_ATTRIBUTES],
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
    if (operation.path) applyAtPath(doc, operation, operation.path, operation.value, schema, id);
    else {
      if (!isObject(operation.value))
        throw scimErrors.invalidValue(`A ${operation.op} without a path needs an object value`);
      for (const [key, value] of Object.entries(operation.value)) {
        if (key.toLowerCase() === 'schemas' || key.toLowerCase() === 'meta') continue;
        applyAtPath(doc, operation, key, value, schema, id);
      }
    }
  }
  return doc;
}

function applyAtPath(
  doc: Doc,
  operation: PatchOperation,
  path: string,
  value: unknown,
  schema: ResourceSchema,
  id: string,
): void {
  if (path.toLowerCase() === 'id') {
    // Okta echoes the id in replace values; only a different id is an attempt to change it.
    if (operation.op !== 'remove' && String(value) === id) return;
    throw scimErrors.mutability('"id" cannot be changed');
  }
  const parsed = parsePath(path, schema);
  if ('extensionOnly' in parsed) {
    const urn = parsed.extensionOnly;
    if (operation.op === 'remove') {
      delete doc[urn];
      return;
    }
    if (!isObject(value)) throw scimErrors.invalidValue(`The value for ${urn} must be an object`);
    // The extension object may carry its own "schemas" (scim2-models sends it): not an attribute.
    for (const [key, subValue] of Object.entries(value)) {
      if (key.toLowerCase() !== 'schemas') applyAtPath(doc, { ...operation }, `${urn}:${key}`, subValue, schema, id);
    }
    return;
  }
  const { attribute, filter, sub } = parsed;
  if (attribute.mutability === 'readOnly') throw scimErrors.mutability(`"${attribute.name}" is read-only`);
  const container = parsed.extension
    ? ((doc[parsed.extension] as Doc | undefined) ?? (doc[parsed.extension] = {}))
    : doc;
  const tidy = () => {
    if (parsed.extension && Object.keys(container).length === 0) delete doc[parsed.extension];
  };
  const label = `${parsed.extension ? `${parsed.extension}:` : ''}${attribute.name}`;

  if (!attribute.multiValued) {
    if (sub) {
      const parent = isObject(container[attribute.name]) ? (container[attribute.name] as Doc) : {};
      if (operation.op === 'remove') delete parent[sub.name];
      else {
        const normalized = normalizeValue(sub, value, `${label}.${sub.name}`);
        if (normalized === undefined) delete parent[sub.name];
        else parent[sub.name] = normalized;
      }
      if (Object.keys(parent).length) container[attribute.name] = parent;
      else delete container[attribute.name];
    } else if (operation.op === 'remove') delete container[attribute.name];
    else {
      const normalized = normalizeValue(attribute, value, label);
      if (normalized === undefined) delete container[attribute.name];
      else if (attribute.type === 'complex' && isObject(container[attribute.name]) && isObject(normalized)) {
        // RFC 7644 §3.5.2.3: sub-attributes not in the value are left unchanged.
        container[attribute.name] = { ...(container[attribute.name] as Doc), ...normalized };
      } else container[attribute.name] = normalized;
    }
    tidy();
    return;
  }

  // Multi-valued attributes.
  const existing = Array.isArray(container[attribute.name]) ? [...(container[attribute.name] as Doc[])] : [];
  const caseExact = (name: string) => findAttribute(attribute.subAttributes ?? [], name)?.caseExact ?? false;
  const sameValue = (a: Doc, b: Doc) => {
    const x = a.value;
    const y = b.value;
    return typeof x === 'string' && typeof y === 'string'
      ? caseExact('value')
        ? x === y
        : x.toLowerCase() === y.toLowerCase()
      : false;
  };
  let result: Doc[];
  if (filter) {
    const selected = existing.filter((e) => matchesElement(e, filter, caseExact));
    if (operation.op === 'remove') {
      result = sub
        ? existing
            .map((e) => (selected.includes(e) ? withoutKey(e, sub.name) : e))
            .filter((e) => Object.keys(e).some((k) => k !== 'type' && k !== 'primary'))
        : existing.filter((e) => !selected.includes(e));
    } else if (selected.length === 0) {
      // Entra ID replaces emails[type eq "work"].value on users without a work address: create that element.
      const seed = elementFromFilter(filter);
      if (!seed) throw scimErrors.noTarget(`No value of "${attribute.name}" matches the filter in "${path}"`);
      const element = sub ? { ...seed, [sub.name]: value } : isObject(value) ? { ...seed, ...value } : undefined;
      if (!element) throw scimErrors.invalidValue(`The value for "${path}" must be an object`);
      result = [...existing, ...((normalizeValue(attribute, [element], label) as Doc[] | undefined) ?? [])];
    } else {
      result = existing.map((e) => {
        if (!selected.includes(e)) return e;
        if (sub) {
          const normalized = normalizeValue(sub, value, `${label}.${sub.name}`);
          return normalized === undefined ? withoutKey(e, sub.name) : { ...e, [sub.name]: normalized };
        }
        const replacement = (normalizeValue(attribute, [value], label) as Doc[] | undefined)?.[0];
        return replacement ? (operation.op === 'add' ? { ...e, ...replacement } : replacement) : e;
      });
    }
  } else if (sub) {
    // emails.value without a filter: every element.
    result =
      operation.op === 'remove'
        ? existing.map((e) => withoutKey(e, sub.name))
        : existing.map((e) => ({ ...e, [sub.name]: normalizeValue(sub, value, `${label}.${sub.name}`) }));
  } else if (operation.op === 'remove') {
    if (value === undefined || value === null) result = [];
    else {
      // Entra ID removes members by listing them: remove just those.
      const victims = (normalizeValue(attribute, value, label) as Doc[] | undefined) ?? [];
      result = existing.filter((e) => !victims.some((v) => sameValue(e, v)));
    }
  } else {
    const incoming = (normalizeValue(attribute, value, label) as Doc[] | undefined) ?? [];
    if (operation.op === 'replace') result = incoming;
    else {
      // add: new values are appended; a value already present is updated, not duplicated.
      result = [...existing];
      for (const item of incoming) {
        const index = result.findIndex((e) => sameValue(e, item));
        if (index >= 0) result[index] = { ...result[index], ...item };
        else result.push(item);
      }
    }
  }
  // A new primary value demotes the others (RFC 7643 §2.4).
  const primaries = result.filter((e) => e.primary === true);
  if (primaries.length > 1) {
    const keep = primaries[primaries.length - 1];
    result = result.map((e) => (e.primary === true && e !== keep ? { ...e, primary: false } : e));
  }
  if (result.length) container[attribute.name] = result;
  else delete container[attribute.name];
  tidy();
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
