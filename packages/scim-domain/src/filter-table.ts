// The attributes a filter may name, derived from the resource declarations: canonical path (lower case), type, case
// rule and the owner's field. The SCIM service types a filter with it; the owner (Users, Groups) joins it with its own
// SQL for each field (OwnerColumns, kept in the owner's repository module) and runs the typed filter with filterToSql.
import type { Attribute, ResourceDeclaration } from './declaration';

/** At most this many terms (comparisons, and/or/not, value paths) in one filter. */
export const MAX_FILTER_TERMS = 64;

export type ScalarType = 'string' | 'boolean' | 'dateTime';

export interface FilterField {
  type: ScalarType;
  /** RFC 7643 caseExact: false compares lower-cased values (matching a lower(...) index). */
  caseExact: boolean;
  /** The owner's field (AttributeRules.owner). */
  owner: string;
}

export type FilterAttribute =
  ({ kind: 'scalar' } & FilterField) | { kind: 'multi'; owner: string; sub: Record<string, FilterField> };

export interface FilterSchema {
  /** Core schema URN: "urn:…:User:userName" names userName. */
  core: string;
  /** Canonical lower-case path → what a filter compares. */
  attributes: Record<string, FilterAttribute>;
  /** Lower-case paths the schema has but a filter may not name (refused as unsupported, not as unknown). */
  unfilterable: Set<string>;
}

export type FilterableType = ScalarType | 'multi';

const SCALAR_TYPES: Partial<Record<Attribute['type'], ScalarType>> = {
  string: 'string',
  reference: 'string',
  binary: 'string',
  boolean: 'boolean',
  dateTime: 'dateTime',
};

function field(attribute: Attribute, path: string): FilterField {
  const type = SCALAR_TYPES[attribute.type];
  if (!type) throw new Error(`Filtering on ${attribute.type} attributes ("${path}") is not implemented`);
  return { type, caseExact: attribute.caseExact, owner: attribute.owner! };
}

/** The filter table of a resource: every attribute with an owner field, unless declared not filterable. */
export function filterSchema(resource: ResourceDeclaration): FilterSchema {
  const schema: FilterSchema = {
    core: resource.schema.id,
    attributes: {},
    unfilterable: new Set(resource.ignoredOnInput.map((n) => n.toLowerCase())),
  };
  const refuse = (attribute: Attribute, path: string) => {
    schema.unfilterable.add(path);
    for (const sub of attribute.subAttributes ?? []) refuse(sub, `${path}.${sub.name.toLowerCase()}`);
  };
  const add = (attribute: Attribute, path: string) => {
    const stored = attribute.owner !== undefined && attribute.filterable !== false;
    if (attribute.type === 'complex' && !attribute.multiValued) {
      // A single complex value (name, meta, manager) is filtered through its sub-attributes.
      for (const sub of attribute.subAttributes ?? []) add(sub, `${path}.${sub.name.toLowerCase()}`);
    } else if (!stored) refuse(attribute, path);
    else if (attribute.multiValued) {
      const sub: Record<string, FilterField> = {};
      for (const s of attribute.subAttributes ?? []) {
        const name = s.name.toLowerCase();
        if (s.owner !== undefined && s.filterable !== false) sub[name] = field(s, `${path}.${name}`);
        else refuse(s, `${path}.${name}`);
      }
      schema.attributes[path] = { kind: 'multi', owner: attribute.owner!, sub };
    } else schema.attributes[path] = { kind: 'scalar', ...field(attribute, path) };
  };
  for (const a of [...resource.common, ...resource.schema.attributes]) add(a, a.name.toLowerCase());
  for (const extension of resource.extensions)
    for (const a of extension.attributes) add(a, `${extension.id.toLowerCase()}:${a.name.toLowerCase()}`);
  return schema;
}

/** The type of a canonical lower-case path ("emails" is multi, "emails.value" a string), if it can be filtered. */
export function filterableType(schema: FilterSchema, path: string): FilterableType | undefined {
  const direct = schema.attributes[path];
  if (direct) return direct.kind === 'multi' ? 'multi' : direct.type;
  const dot = path.lastIndexOf('.');
  const parent = dot > 0 ? schema.attributes[path.slice(0, dot)] : undefined;
  return parent?.kind === 'multi' ? parent.sub[path.slice(dot + 1)]?.type : undefined;
}
