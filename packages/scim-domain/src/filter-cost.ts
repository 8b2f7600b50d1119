// What a SCIM filter costs the owner's database, in units of one indexed equality. The SCIM service refuses a filter
// over MAX_FILTER_COST; the gateway prices a request with the same weights. Terms alone say little: 63 `userName eq`
// terms are 63 index probes, 63 `emails.value co` terms are 63 scans of every user's addresses.
import { parse, type Filter } from 'scim2-parse-filter';
import { filterSchema, type FilterSchema } from './filter-table';
import { GROUP_RESOURCE_TYPE, USER_RESOURCE_TYPE } from './declaration';

/** A comparison on a single-valued attribute other than co/sw/ew (eq, ne, gt…, pr): an index probe or a cheap test. */
export const SCALAR_COMPARISON_COST = 1;
/** co/sw/ew on a single-valued attribute: a LIKE over every row of the organization. */
export const SCALAR_PATTERN_COST = 2;
/** `emails.value eq "x"` (no value path): answered from an index of the values. */
export const MULTI_VALUED_EQUALITY_COST = 2;
/**
 * Any other comparison on a multi-valued attribute (co/sw/ew/pr, a sub-attribute without an index) and every
 * comparison inside a value path (`emails[type eq "work"]`): a walk over each row's elements.
 */
export const MULTI_VALUED_SCAN_COST = 8;
/** and / or / not cost nothing of their own; MAX_FILTER_TERMS bounds how many there are. */
export const LOGICAL_OPERATOR_COST = 0;

/**
 * The largest cost the SCIM service answers. It admits every shape identity providers send (`userName eq`,
 * `externalId eq`, `id eq … and members[value eq …]`: at most 9) and an or of 64 indexed equalities, and refuses
 * more than eight unindexed comparisons on multi-valued attributes.
 */
export const MAX_FILTER_COST = 64;

/** Multi-valued sub-attributes with an index for `eq` (see the owners' eqShortcut). */
const INDEXED_MULTI_VALUED_EQUALITY = new Set(['emails.value']);

const DEFAULT_SCHEMAS = [filterSchema(USER_RESOURCE_TYPE), filterSchema(GROUP_RESOURCE_TYPE)];

function isMultiValued(schemas: FilterSchema[], path: string): boolean {
  return schemas.some((s) => s.attributes[path]?.kind === 'multi');
}

/** The canonical lower-case path of an attribute as written, without its core schema URN. */
function canonicalPath(schemas: FilterSchema[], raw: string): string {
  let name = raw.toLowerCase();
  for (const s of schemas) {
    const prefix = `${s.core.toLowerCase()}:`;
    if (name.startsWith(prefix)) name = name.slice(prefix.length);
  }
  return name;
}

function comparisonCost(schemas: FilterSchema[], op: string, rawPath: string, inValuePath: boolean): number {
  if (inValuePath) return MULTI_VALUED_SCAN_COST;
  const path = canonicalPath(schemas, rawPath);
  const dot = path.lastIndexOf('.');
  const parent = dot > 0 ? path.slice(0, dot) : undefined;
  // `emails eq "x"` compares emails.value.
  const multiPath = isMultiValued(schemas, path)
    ? `${path}.value`
    : parent && isMultiValued(schemas, parent)
      ? path
      : '';
  if (multiPath) {
    return op === 'eq' && INDEXED_MULTI_VALUED_EQUALITY.has(multiPath)
      ? MULTI_VALUED_EQUALITY_COST
      : MULTI_VALUED_SCAN_COST;
  }
  return op === 'co' || op === 'sw' || op === 'ew' ? SCALAR_PATTERN_COST : SCALAR_COMPARISON_COST;
}

/**
 * The cost of a parsed filter (scim2-parse-filter's tree). Attributes are looked up in `schemas` (by default the
 * User and Group filter tables); an unknown attribute costs like a single-valued one (the service refuses it anyway).
 */
export function filterTreeCost(filter: Filter, schemas: FilterSchema[] = DEFAULT_SCHEMAS): number {
  const walk = (node: Filter, inValuePath: boolean): number => {
    const op = node.op.toLowerCase();
    switch (op) {
      case 'and':
      case 'or':
        return (
          LOGICAL_OPERATOR_COST + (node as { filters: Filter[] }).filters.reduce((n, f) => n + walk(f, inValuePath), 0)
        );
      case 'not':
        return LOGICAL_OPERATOR_COST + walk((node as { filter: Filter }).filter, inValuePath);
      case '[]':
        return walk((node as { valFilter: Filter }).valFilter, true);
      default:
        return comparisonCost(schemas, op, (node as { attrPath: string }).attrPath, inValuePath);
    }
  };
  return walk(filter, false);
}

/** The cost of a filter as sent (`?filter=`), or undefined when it cannot be parsed. */
export function filterCost(text: string, schemas?: FilterSchema[]): number | undefined {
  let tree: Filter;
  try {
    tree = parse(text);
  } catch {
    return undefined;
  }
  return filterTreeCost(tree, schemas);
}

/** What a client is told when its filter costs too much: what counts, and what to do instead. */
export function filterTooCostlyDetail(cost: number): string {
  return (
    `The filter costs ${cost}, more than the ${MAX_FILTER_COST} this service answers. A comparison on a ` +
    `single-valued attribute (userName eq, externalId eq) costs ${SCALAR_COMPARISON_COST}, co/sw/ew on one ` +
    `${SCALAR_PATTERN_COST}, emails.value eq ${MULTI_VALUED_EQUALITY_COST}, any other comparison on a multi-valued ` +
    `attribute or inside a value path ${MULTI_VALUED_SCAN_COST}. Split the filter into several requests, or ` +
    `look users up with eq on userName, externalId or emails.value.`
  );
}
