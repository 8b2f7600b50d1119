import { filterV1 } from '@mileage/proto';
import { errors } from '@mileage/runtime/grpc';
import { parseRfc3339 } from '@mileage/runtime/formats';
import { MAX_FILTER_TERMS, type FilterField, type FilterSchema, type ScalarType } from './filter-table';

/** A filterable value as SQL: its type, case rule and the owner's expression reading it. */
export interface ScalarAttribute {
  kind: 'scalar';
  type: ScalarType;
  /** RFC 7643 caseExact: false compares lower(sql) with lower(value), matching a lower(...) index. */
  caseExact: boolean;
  /** SQL expression of the value; for sub-attributes it is written in terms of the element alias. */
  sql: string;
}

export interface MultiValuedAttribute {
  kind: 'multi';
  /** A FROM item producing one row per element, e.g. `jsonb_array_elements(u.emails) AS el`. */
  elements: string;
  /** Sub-attributes by lower-case name, in terms of the element alias. */
  sub: Record<string, ScalarAttribute>;
  /**
   * Index-friendly forms of `attr.sub eq value` (e.g. a GIN containment test); the value arrives as the single
   * binding. Used for top-level comparisons, where "some element equals" is exactly what eq means.
   */
  eqShortcut?: Record<string, string>;
}

/** Canonical lower-case attribute path → how the owner stores it. */
export type AttributeMap = Record<string, ScalarAttribute | MultiValuedAttribute>;

/** The elements of a multi-valued owner field: a FROM item and the SQL of each element field. */
export interface ElementColumns {
  elements: string;
  field: (name: string, type: ScalarType) => string;
  /** Owner element field → an index-friendly `field eq ?` (see MultiValuedAttribute.eqShortcut). */
  eqShortcut?: Record<string, string>;
}

/** How an owner stores the fields of its record; lives in the owner's repository module, next to its tables. */
export interface OwnerColumns {
  /** Owner field (`user_name`, `name.given_name`) → SQL expression. */
  scalars: Record<string, string>;
  /** Multi-valued owner field (`emails`) → its elements. */
  multi: Record<string, ElementColumns>;
  /** Document fields kept as sent (`scim_attributes`) → the jsonb column; `scim_attributes.title` reads ->>'title'. */
  documents: Record<string, string>;
}

const CASTS: Record<ScalarType, string> = { string: '', boolean: '::boolean', dateTime: '::timestamptz' };

/** A jsonb value at `path` (keys) inside `column`, as text cast to `type`. */
function jsonbPath(column: string, path: string[], type: ScalarType): string {
  const keys = path.map((k) => `'${k.replace(/'/g, "''")}'`);
  const last = keys.pop()!;
  return `(${[column, ...keys].join('->')}->>${last})${CASTS[type]}`;
}

/** The elements of a jsonb array of objects, one row per element under `alias`. */
export function jsonbElements(array: string, alias: string): ElementColumns {
  return {
    elements: `jsonb_array_elements(coalesce(${array}, '[]'::jsonb)) AS ${alias}`,
    field: (name, type) => jsonbPath(alias, [name], type),
  };
}

/**
 * The owner's SQL filter table: each field of the filter table joined with the owner's column for it. A field the
 * owner has no column for fails here, when the owner starts (and in its tests), never on a request.
 */
export function sqlFilterTable(schema: FilterSchema, columns: OwnerColumns): AttributeMap {
  const documentPath = (owner: string) => {
    const [doc, ...path] = owner.split('.');
    const column = columns.documents[doc!];
    return column && path.length ? { column, path } : undefined;
  };
  const scalar = (f: FilterField): ScalarAttribute => {
    const doc = documentPath(f.owner);
    const sql = columns.scalars[f.owner] ?? (doc && jsonbPath(doc.column, doc.path, f.type));
    if (!sql) throw new Error(`The owner has no column for "${f.owner}"`);
    return { kind: 'scalar', type: f.type, caseExact: f.caseExact, sql };
  };
  const table: AttributeMap = {};
  for (const [path, attribute] of Object.entries(schema.attributes)) {
    if (attribute.kind === 'scalar') {
      table[path] = scalar(attribute);
      continue;
    }
    const doc = documentPath(attribute.owner);
    const alias = path.replace(/[^a-z]/g, '_');
    const columnsOf =
      columns.multi[attribute.owner] ??
      (doc && jsonbElements(`${doc.column}${doc.path.map((k) => `->'${k}'`).join('')}`, alias));
    if (!columnsOf) throw new Error(`The owner has no column for "${attribute.owner}"`);
    const sub: Record<string, ScalarAttribute> = {};
    const eqShortcut: Record<string, string> = {};
    for (const [name, f] of Object.entries(attribute.sub)) {
      sub[name] = { kind: 'scalar', type: f.type, caseExact: f.caseExact, sql: columnsOf.field(f.owner, f.type) };
      const shortcut = columnsOf.eqShortcut?.[f.owner];
      if (shortcut) eqShortcut[name] = shortcut;
    }
    table[path] = {
      kind: 'multi',
      elements: columnsOf.elements,
      sub,
      ...(Object.keys(eqShortcut).length ? { eqShortcut } : {}),
    };
  }
  return table;
}

/**
 * Translates a parsed SCIM filter (mileage.filter.v1.Filter) into a parameterised SQL condition over an
 * allow-list of attributes. Values only ever travel as bindings (`?` placeholders for knex.raw); column
 * expressions come from the allow-list, never from the request.
 */

export interface SqlCondition {
  sql: string;
  bindings: (string | number | boolean)[];
}

class Builder {
  nodes = 0;
  constructor(private readonly attributes: AttributeMap) {}

  build(filter: filterV1.Filter, scope?: { name: string; attr: MultiValuedAttribute }): SqlCondition {
    if (++this.nodes > MAX_FILTER_TERMS) throw invalidFilter(`the filter has more than ${MAX_FILTER_TERMS} terms`);
    const expr = filter.expr;
    switch (expr?.$case) {
      case 'allOf':
      case 'anyOf': {
        const parts = expr.value.filters.map((f) => this.build(f, scope));
        if (parts.length === 0) throw invalidFilter(`an empty ${expr.$case === 'allOf' ? 'and' : 'or'}`);
        const joiner = expr.$case === 'allOf' ? ' AND ' : ' OR ';
        return { sql: `(${parts.map((p) => p.sql).join(joiner)})`, bindings: parts.flatMap((p) => p.bindings) };
      }
      case 'not': {
        const inner = this.build(expr.value, scope);
        // NOT over a NULL comparison is NULL; coalesce so that "not (title eq x)" matches users without a title.
        return { sql: `(NOT coalesce(${inner.sql}, false))`, bindings: inner.bindings };
      }
      case 'comparison':
        return this.comparison(expr.value, scope);
      case 'valuePath': {
        if (scope) throw invalidFilter('value paths cannot be nested');
        const name = expr.value.attribute.toLowerCase();
        const attr = this.attributes[name];
        if (!attr || attr.kind !== 'multi')
          throw invalidFilter(`"${expr.value.attribute}" is not a multi-valued attribute that can be filtered`);
        if (!expr.value.filter) throw invalidFilter(`"${expr.value.attribute}[]" has no filter`);
        const inner = this.build(expr.value.filter, { name, attr });
        const exists = { sql: `EXISTS (SELECT 1 FROM ${attr.elements} WHERE ${inner.sql})`, bindings: inner.bindings };
        // emails[type eq "work" and value eq "x"]: the indexable "some value equals x" narrows the rows first.
        const narrowing = indexableEqualities(expr.value.filter, name, attr);
        if (narrowing.length === 0) return exists;
        return {
          sql: `(${narrowing.map((n) => n.sql).join(' AND ')} AND ${exists.sql})`,
          bindings: [...narrowing.flatMap((n) => n.bindings), ...exists.bindings],
        };
      }
      default:
        throw invalidFilter('an empty filter expression');
    }
  }

  private comparison(c: filterV1.Comparison, scope?: { name: string; attr: MultiValuedAttribute }): SqlCondition {
    const path = c.attribute.toLowerCase();
    if (scope) {
      // Inside attr[...] sub-attributes may be written bare ("type") or qualified ("emails.type").
      const subName = path.startsWith(`${scope.name}.`) ? path.slice(scope.name.length + 1) : path;
      const sub = scope.attr.sub[subName];
      if (!sub) throw invalidFilter(`"${c.attribute}" is not a sub-attribute of ${scope.name}`);
      return compare(sub, c, c.attribute);
    }
    const direct = this.attributes[path];
    if (direct?.kind === 'scalar') return compare(direct, c, c.attribute);
    if (direct?.kind === 'multi') {
      // "emails pr" and "emails eq x" (the value sub-attribute of a multi-valued attribute).
      if (c.operator === filterV1.Operator.OPERATOR_PR)
        return { sql: `EXISTS (SELECT 1 FROM ${direct.elements})`, bindings: [] };
      return this.comparison({ ...c, attribute: `${path}.value` });
    }
    const dot = path.lastIndexOf('.');
    const parent = dot > 0 ? this.attributes[path.slice(0, dot)] : undefined;
    if (parent?.kind === 'multi') {
      const subName = path.slice(dot + 1);
      const sub = parent.sub[subName];
      if (!sub) throw invalidFilter(`unknown attribute "${c.attribute}"`);
      const shortcut = parent.eqShortcut?.[subName];
      if (shortcut && c.operator === filterV1.Operator.OPERATOR_EQ && c.value?.$case === 'stringValue') {
        return { sql: shortcut, bindings: [c.value.value] };
      }
      const inner = compare(sub, c, c.attribute);
      return { sql: `EXISTS (SELECT 1 FROM ${parent.elements} WHERE ${inner.sql})`, bindings: inner.bindings };
    }
    throw invalidFilter(`unknown attribute "${c.attribute}"`);
  }
}

/** The `sub eq "value"` terms of a conjunction that have an index-friendly shortcut. */
function indexableEqualities(filter: filterV1.Filter, scope: string, attr: MultiValuedAttribute): SqlCondition[] {
  const expr = filter.expr;
  if (expr?.$case === 'allOf') return expr.value.filters.flatMap((f) => indexableEqualities(f, scope, attr));
  if (expr?.$case !== 'comparison') return [];
  const c = expr.value;
  const path = c.attribute.toLowerCase();
  const sub = path.startsWith(`${scope}.`) ? path.slice(scope.length + 1) : path;
  const shortcut = attr.eqShortcut?.[sub];
  if (!shortcut || c.operator !== filterV1.Operator.OPERATOR_EQ || c.value?.$case !== 'stringValue') return [];
  return [{ sql: shortcut, bindings: [c.value.value] }];
}

function invalidFilter(message: string) {
  const err = errors.invalidArgument(message, [{ field: 'filter', description: message, reason: 'INVALID_FILTER' }]);
  err.details.reason = 'INVALID_FILTER';
  return err;
}

const Op = filterV1.Operator;

function likePattern(value: string, op: filterV1.Operator): string {
  const escaped = value.replace(/[\\%_]/g, (ch) => `\\${ch}`);
  if (op === Op.OPERATOR_CO) return `%${escaped}%`;
  if (op === Op.OPERATOR_SW) return `${escaped}%`;
  return `%${escaped}`;
}

function compare(attr: ScalarAttribute, c: filterV1.Comparison, name: string): SqlCondition {
  const op = c.operator;
  if (op === Op.OPERATOR_PR) {
    return {
      sql: attr.type === 'string' ? `(${attr.sql} IS NOT NULL AND ${attr.sql} <> '')` : `(${attr.sql} IS NOT NULL)`,
      bindings: [],
    };
  }
  if (op === Op.OPERATOR_UNSPECIFIED || op === Op.UNRECOGNIZED) throw invalidFilter(`no operator for "${name}"`);
  const value = c.value;
  if (value === undefined || value.$case === 'nullValue') {
    // "attr eq null" means "not present" (RFC 7644 §3.4.2.2 treats null as unassigned); ne null means present.
    if (op === Op.OPERATOR_EQ) return { sql: `(${attr.sql} IS NULL)`, bindings: [] };
    if (op === Op.OPERATOR_NE) return { sql: `(${attr.sql} IS NOT NULL)`, bindings: [] };
    throw invalidFilter(`"${name}" cannot be compared with null using this operator`);
  }
  switch (attr.type) {
    case 'boolean': {
      if (value.$case !== 'boolValue') throw invalidFilter(`"${name}" is a boolean; compare it with true or false`);
      if (op === Op.OPERATOR_EQ) return { sql: `(${attr.sql} = ?)`, bindings: [value.value] };
      if (op === Op.OPERATOR_NE) return { sql: `(${attr.sql} IS DISTINCT FROM ?)`, bindings: [value.value] };
      throw invalidFilter(`"${name}" is a boolean; only eq, ne and pr apply`);
    }
    case 'dateTime': {
      // xsd:dateTime without a zone is read as UTC; the value must be a real, storable instant (else a 500 once).
      const raw = value.$case === 'stringValue' ? value.value : '';
      const checked = parseRfc3339(/([zZ]|[+-]\d{2}:\d{2})$/.test(raw) ? raw : `${raw}Z`);
      if ('problem' in checked) {
        throw invalidFilter(
          `"${name}" is a dateTime; compare it with an xsd:dateTime string such as "2026-01-31T12:00:00Z" (${checked.problem})`,
        );
      }
      const sqlOp =
        ORDERING[op] ?? (op === Op.OPERATOR_EQ ? '=' : op === Op.OPERATOR_NE ? 'IS DISTINCT FROM' : undefined);
      if (!sqlOp) throw invalidFilter(`"${name}" is a dateTime; co, sw and ew do not apply`);
      return { sql: `(${attr.sql} ${sqlOp} ?::timestamptz)`, bindings: [checked.iso] };
    }
    case 'string': {
      if (value.$case !== 'stringValue') throw invalidFilter(`"${name}" is a string; compare it with a quoted string`);
      const column = attr.caseExact ? attr.sql : `lower(${attr.sql})`;
      const param = attr.caseExact ? '?' : 'lower(?)';
      if (op === Op.OPERATOR_EQ) return { sql: `(${column} = ${param})`, bindings: [value.value] };
      if (op === Op.OPERATOR_NE) return { sql: `(${column} IS DISTINCT FROM ${param})`, bindings: [value.value] };
      if (op === Op.OPERATOR_CO || op === Op.OPERATOR_SW || op === Op.OPERATOR_EW) {
        return { sql: `(${column} LIKE ${param})`, bindings: [likePattern(value.value, op)] };
      }
      const sqlOp = ORDERING[op];
      if (!sqlOp) throw invalidFilter(`unsupported operator for "${name}"`);
      return { sql: `(${column} ${sqlOp} ${param})`, bindings: [value.value] };
    }
  }
}

const ORDERING: Partial<Record<filterV1.Operator, string>> = {
  [Op.OPERATOR_GT]: '>',
  [Op.OPERATOR_GE]: '>=',
  [Op.OPERATOR_LT]: '<',
  [Op.OPERATOR_LE]: '<=',
};

/** The SQL condition for `filter`; INVALID_ARGUMENT (reason INVALID_FILTER) for anything outside the allow-list. */
export function filterToSql(filter: filterV1.Filter | undefined, table: AttributeMap): SqlCondition {
  if (!filter) return { sql: 'true', bindings: [] };
  return new Builder(table).build(filter);
}

/**
 * The attribute (lower-cased) and value of a filter that is one string equality (`userName eq "…"`: the lookup an
 * identity provider sends before each change), else undefined.
 */
export function stringEquality(filter: filterV1.Filter | undefined): { attribute: string; value: string } | undefined {
  const expr = filter?.expr;
  return expr?.$case === 'comparison' &&
    expr.value.operator === filterV1.Operator.OPERATOR_EQ &&
    expr.value.value?.$case === 'stringValue'
    ? { attribute: expr.value.attribute.toLowerCase(), value: expr.value.value.value }
    : undefined;
}
