import {
  extraPrimary,
  filterSchema,
  tooManyValues,
  type FilterSchema,
  type ResourceDeclaration,
} from '@mileage/scim-domain';
import { scimErrors } from './errors';
import { findAttribute, type Attribute } from './schemas';

/** A resource in canonical form: attribute names spelled as in the schema, no nulls, no empty arrays. */
export type Doc = Record<string, unknown>;

/** A resource declaration (@mileage/scim-domain) in the form reading, projecting and filtering use. */
export interface ResourceSchema {
  /** Core schema URN, e.g. urn:ietf:params:scim:schemas:core:2.0:User. */
  core: string;
  /** id, externalId and meta, as the resource has them. */
  common: Attribute[];
  attributes: Attribute[];
  /** Extension schema URN → its attributes. */
  extensions: Record<string, Attribute[]>;
  ignoreUnknownExtensions: boolean;
  ignoredOnInput: string[];
  filter: FilterSchema;
}

export function resourceSchema(declaration: ResourceDeclaration): ResourceSchema {
  return {
    core: declaration.schema.id,
    common: declaration.common,
    attributes: declaration.schema.attributes,
    extensions: Object.fromEntries(declaration.extensions.map((e) => [e.id, e.attributes])),
    ignoreUnknownExtensions: declaration.ignoreUnknownExtensions,
    ignoredOnInput: declaration.ignoredOnInput,
    filter: filterSchema(declaration),
  };
}

const MAX_STRING = 2048;

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The canonical spelling of an extension URN named in any case, if the schema has it. */
export function findExtension(schema: ResourceSchema, urn: string): string | undefined {
  const lower = urn.toLowerCase();
  return Object.keys(schema.extensions).find((u) => u.toLowerCase() === lower);
}

/**
 * Reads a resource body into canonical form: attribute names matched case-insensitively, types checked
 * ("True"/"False" strings accepted as booleans, as Entra ID sends them), read-only and write-only attributes
 * dropped (RFC 7643 §2.2), unknown attributes refused with invalidSyntax.
 */
export function normalizeBody(body: unknown, schema: ResourceSchema): Doc {
  if (!isObject(body)) throw scimErrors.invalidSyntax('The request body must be a JSON object');
  const doc: Doc = {};
  for (const [key, value] of Object.entries(body)) {
    const lower = key.toLowerCase();
    if (lower === 'schemas') {
      if (!Array.isArray(value) || !value.every((s) => typeof s === 'string'))
        throw scimErrors.invalidSyntax('"schemas" must be an array of URNs');
      continue;
    }
    if (lower === 'id' || lower === 'meta' || schema.ignoredOnInput.includes(lower)) continue;
    if (lower === 'externalid') {
      if (value === null) continue;
      if (typeof value !== 'string' || value.length > 256)
        throw scimErrors.invalidValue('"externalId" must be a string of at most 256 characters');
      doc.externalId = value;
      continue;
    }
    const extension = findExtension(schema, key);
    if (extension) {
      if (value === null) continue;
      if (!isObject(value)) throw scimErrors.invalidValue(`"${extension}" must be an object`);
      const ext: Doc = {};
      for (const [subKey, subValue] of Object.entries(value)) {
        if (subKey.toLowerCase() === 'schemas') continue;
        const def = findAttribute(schema.extensions[extension]!, subKey);
        if (!def) throw scimErrors.invalidSyntax(`Unknown attribute "${subKey}" in ${extension}`);
        setNormalized(ext, def, normalizeValue(def, subValue, `${extension}:${def.name}`));
      }
      if (Object.keys(ext).length) doc[extension] = ext;
      continue;
    }
    if (key.includes(':')) {
      // A core attribute written with its schema URN, or another schema's extension.
      const corePrefix = `${schema.core.toLowerCase()}:`;
      if (lower.startsWith(corePrefix)) {
        const inner = normalizeBody({ [key.slice(corePrefix.length)]: value }, schema);
        Object.assign(doc, inner);
        continue;
      }
      if (schema.ignoreUnknownExtensions) continue;
      throw scimErrors.invalidSyntax(`"${key}" is not a schema this service supports`);
    }
    const def = findAttribute(schema.attributes, key);
    if (!def) throw scimErrors.invalidSyntax(`Unknown attribute "${key}"`);
    setNormalized(doc, def, normalizeValue(def, value, def.name));
  }
  return doc;
}

function setNormalized(target: Doc, def: Attribute, value: unknown): void {
  if (value === undefined) delete target[def.name];
  else target[def.name] = value;
}

/** One attribute's value in canonical form; undefined means unassigned (null, empty, or not writable). */
export function normalizeValue(def: Attribute, value: unknown, path: string): unknown {
  if (def.mutability === 'readOnly' || def.mutability === 'writeOnly') return undefined;
  if (value === null || value === undefined) return undefined;
  if (def.multiValued) {
    const list = Array.isArray(value) ? value : [value];
    const tooMany = tooManyValues(def, list.length);
    if (tooMany) throw scimErrors.invalidFields([tooMany]);
    const items = list
      .map((item, i) => normalizeSingle(def, item, `${path}[${i}]`))
      .filter((item) => item !== undefined);
    const primaries = extraPrimary(def, items);
    if (primaries) throw scimErrors.invalidFields([primaries]);
    return items.length ? items : undefined;
  }
  if (Array.isArray(value)) {
    // A single value wrapped in an array (seen from some clients): accept exactly one element.
    if (value.length === 1) return normalizeSingle(def, value[0], path);
    throw scimErrors.invalidValue(`"${path}" takes a single value`);
  }
  return normalizeSingle(def, value, path);
}

function normalizeSingle(def: Attribute, value: unknown, path: string): unknown {
  if (value === null || value === undefined) return undefined;
  if (def.type === 'complex') {
    // Entra ID sends the manager as a bare id: {"manager": "abc"} means {"manager": {"value": "abc"}}.
    if (typeof value === 'string' && def.subAttributes?.some((s) => s.name === 'value')) value = { value };
    if (!isObject(value)) throw scimErrors.invalidValue(`"${path}" must be an object`);
    const out: Doc = {};
    for (const [key, subValue] of Object.entries(value)) {
      const sub = findAttribute(def.subAttributes ?? [], key);
      if (!sub) throw scimErrors.invalidSyntax(`Unknown attribute "${path}.${key}"`);
      const normalized = normalizeValue(sub, subValue, `${path}.${sub.name}`);
      if (normalized !== undefined) out[sub.name] = normalized;
    }
    return Object.keys(out).length ? out : undefined;
  }
  if (def.type === 'boolean') {
    if (typeof value === 'boolean') return value;
    if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
    throw scimErrors.invalidValue(`"${path}" must be a boolean`);
  }
  if (typeof value !== 'string') throw scimErrors.invalidValue(`"${path}" must be a string`);
  if (value.length > MAX_STRING) throw scimErrors.invalidValue(`"${path}" is longer than ${MAX_STRING} characters`);
  return value;
}

/** Attributes returned whatever `attributes` / `excludedAttributes` say (RFC 7643 returned "always"). */
const ALWAYS = new Set(['id', 'schemas']);

interface Selection {
  /** Lower-case top-level names (with extension URNs as names). */
  top: string;
  sub?: string;
}

function parseSelection(list: string | undefined, schema: ResourceSchema): Selection[] | undefined {
  if (list === undefined || list.trim() === '') return undefined;
  return list.split(',').map((raw) => {
    let name = raw.trim();
    const corePrefix = `${schema.core.toLowerCase()}:`;
    if (name.toLowerCase().startsWith(corePrefix)) name = name.slice(corePrefix.length);
    for (const urn of Object.keys(schema.extensions)) {
      if (name.toLowerCase() === urn.toLowerCase()) return { top: urn.toLowerCase() };
      if (name.toLowerCase().startsWith(`${urn.toLowerCase()}:`)) {
        return { top: urn.toLowerCase(), sub: name.slice(urn.length + 1).toLowerCase() };
      }
    }
    const [top, sub] = name.toLowerCase().split('.', 2);
    return { top: top!, ...(sub ? { sub } : {}) };
  });
}

/** Applies `attributes` / `excludedAttributes` (RFC 7644 §3.9) to a full representation. */
export function project(resource: Doc, schema: ResourceSchema, attributes?: string, excluded?: string): Doc {
  const include = parseSelection(attributes, schema);
  const exclude = parseSelection(excluded, schema);
  if (!include && !exclude) return resource;
  const out: Doc = {};
  for (const [key, value] of Object.entries(resource)) {
    const lower = key.toLowerCase();
    if (ALWAYS.has(lower)) {
      out[key] = value;
      continue;
    }
    if (include) {
      const picks = include.filter((s) => s.top === lower);
      if (!picks.length) continue;
      if (picks.some((p) => !p.sub) || (!isObject(value) && !Array.isArray(value))) out[key] = value;
      else out[key] = pickSubs(value, new Set(picks.map((p) => p.sub!)));
      continue;
    }
    const drops = exclude!.filter((s) => s.top === lower);
    if (drops.some((d) => !d.sub)) continue;
    out[key] = drops.length ? dropSubs(value, new Set(drops.map((d) => d.sub!))) : value;
  }
  return out;
}

function pickSubs(value: unknown, subs: Set<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => pickSubs(v, subs));
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => subs.has(k.toLowerCase())));
}

function dropSubs(value: unknown, subs: Set<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => dropSubs(v, subs));
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => !subs.has(k.toLowerCase())));
}

/** Checks that `attributes` / `excludedAttributes` name attributes of the resource (typos are 400, not silence). */
export function checkSelection(list: string | undefined, schema: ResourceSchema, parameter: string): void {
  for (const s of parseSelection(list, schema) ?? []) {
    const ext = Object.keys(schema.extensions).find((u) => u.toLowerCase() === s.top);
    const def = ext
      ? s.sub
        ? findAttribute(schema.extensions[ext]!, s.sub.split('.')[0]!)
        : { name: ext }
      : (findAttribute([...schema.attributes, ...schema.common], s.top) ??
        (s.top === 'schemas' ? { name: 'schemas' } : undefined));
    if (!def)
      throw scimErrors.invalidValue(`${parameter} names an unknown attribute "${s.sub ? `${s.top}.${s.sub}` : s.top}"`);
  }
}

/** Both selection parameters of a request checked (RFC 7644 §3.9). */
export function checkSelections(query: URLSearchParams, schema: ResourceSchema): void {
  checkSelection(query.get('attributes') ?? undefined, schema, 'attributes');
  checkSelection(query.get('excludedAttributes') ?? undefined, schema, 'excludedAttributes');
}

/** A representation projected as the request's attributes / excludedAttributes ask. */
export function projectFor(resource: Doc, schema: ResourceSchema, query: URLSearchParams): Doc {
  return project(resource, schema, query.get('attributes') ?? undefined, query.get('excludedAttributes') ?? undefined);
}

/** The id a body names ("id" in any case), if any. */
function sentId(body: unknown): unknown {
  return isObject(body) ? Object.entries(body).find(([k]) => k.toLowerCase() === 'id')?.[1] : undefined;
}

/** A PUT body may echo the resource's id (Okta does) but not name another: id is read-only (RFC 7643 §3.1). */
export function refuseOtherId(body: unknown, id: string): void {
  const sent = sentId(body);
  if (sent !== undefined && sent !== null && String(sent) !== id) throw scimErrors.mutability('"id" cannot be changed');
}
