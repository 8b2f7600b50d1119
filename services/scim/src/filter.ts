import { filterV1 } from '@mileage/proto';
import {
  filterableType,
  filterTooCostlyDetail,
  filterTreeCost,
  MAX_FILTER_COST,
  MAX_FILTER_TERMS,
  type FilterSchema,
} from '@mileage/scim-domain';
import { parse, type Filter as Ast } from 'scim2-parse-filter';
import { scimErrors } from './errors';
import { isObject } from './resource';

export const MAX_FILTER_LENGTH = 2048;

/** Parses a filter string with scim2-parse-filter; every syntax error is a 400 invalidFilter. */
export function parseFilter(text: string): Ast {
  if (text.length > MAX_FILTER_LENGTH)
    throw scimErrors.invalidFilter(`The filter is longer than ${MAX_FILTER_LENGTH} characters`);
  try {
    return parse(text);
  } catch (err) {
    throw scimErrors.invalidFilter(
      `The filter cannot be parsed: ${err instanceof Error ? err.message.slice(0, 200) : 'syntax error'}`,
    );
  }
}

const OPERATORS: Record<string, filterV1.Operator> = {
  eq: filterV1.Operator.OPERATOR_EQ,
  ne: filterV1.Operator.OPERATOR_NE,
  co: filterV1.Operator.OPERATOR_CO,
  sw: filterV1.Operator.OPERATOR_SW,
  ew: filterV1.Operator.OPERATOR_EW,
  gt: filterV1.Operator.OPERATOR_GT,
  ge: filterV1.Operator.OPERATOR_GE,
  lt: filterV1.Operator.OPERATOR_LT,
  le: filterV1.Operator.OPERATOR_LE,
  pr: filterV1.Operator.OPERATOR_PR,
};

/**
 * Turns a parsed filter into the owner's Filter message: attribute names case-insensitive and URN-prefixed
 * forms accepted, each checked against the owner's declarations (@mileage/scim-domain), values typed ("True" is
 * a boolean for active).
 */
export function toOwnerFilter(ast: Ast, schema: FilterSchema): filterV1.Filter {
  const owner = typedFilter(ast, schema);
  // After the typing, so an unknown attribute is told as such rather than priced.
  const cost = filterTreeCost(ast, [schema]);
  if (cost > MAX_FILTER_COST) throw scimErrors.invalidFilter(filterTooCostlyDetail(cost));
  return owner;
}

function typedFilter(ast: Ast, schema: FilterSchema): filterV1.Filter {
  let nodes = 0;
  const canonical = (raw: string, scope?: string): string => {
    let name = raw.toLowerCase();
    const corePrefix = `${schema.core.toLowerCase()}:`;
    if (name.startsWith(corePrefix)) name = name.slice(corePrefix.length);
    if (scope && !name.startsWith(`${scope}.`)) name = `${scope}.${name}`;
    if (schema.unfilterable.has(name) || schema.unfilterable.has(name.split('.')[0]!)) {
      throw scimErrors.invalidFilter(`Filtering on "${raw}" is not supported`);
    }
    if (!filterableType(schema, name)) throw scimErrors.invalidFilter(`Unknown attribute "${raw}" in the filter`);
    return name;
  };
  const walk = (node: Ast, scope?: string): filterV1.Filter => {
    if (++nodes > MAX_FILTER_TERMS)
      throw scimErrors.invalidFilter(`The filter has more than ${MAX_FILTER_TERMS} terms`);
    switch (node.op) {
      case 'and':
        return { expr: { $case: 'allOf', value: { filters: node.filters.map((f) => walk(f, scope)) } } };
      case 'or':
        return { expr: { $case: 'anyOf', value: { filters: node.filters.map((f) => walk(f, scope)) } } };
      case 'not':
        return { expr: { $case: 'not', value: walk(node.filter, scope) } };
      case '[]': {
        if (scope) throw scimErrors.invalidFilter('Value paths cannot be nested');
        const attribute = canonical(node.attrPath);
        if (filterableType(schema, attribute) !== 'multi')
          throw scimErrors.invalidFilter(`"${node.attrPath}" is not multi-valued`);
        return { expr: { $case: 'valuePath', value: { attribute, filter: walk(node.valFilter, attribute) } } };
      }
      default: {
        const op = OPERATORS[node.op.toLowerCase()];
        if (op === undefined) throw scimErrors.invalidFilter(`Unknown operator "${node.op}"`);
        const attribute = canonical(node.attrPath, scope);
        const type = filterableType(schema, attribute)!;
        const comparison: filterV1.Comparison = { attribute, operator: op };
        if (op !== filterV1.Operator.OPERATOR_PR) {
          const raw = (node as { compValue?: unknown }).compValue;
          if (type === 'boolean' && typeof raw === 'string' && /^(true|false)$/i.test(raw)) {
            comparison.value = { $case: 'boolValue', value: raw.toLowerCase() === 'true' };
          } else if (typeof raw === 'string') comparison.value = { $case: 'stringValue', value: raw };
          else if (typeof raw === 'boolean') comparison.value = { $case: 'boolValue', value: raw };
          else if (typeof raw === 'number') comparison.value = { $case: 'numberValue', value: raw };
          else if (raw === null) comparison.value = { $case: 'nullValue', value: 0 as never };
          else throw scimErrors.invalidFilter(`Unsupported value for "${node.attrPath}"`);
          if (type === 'string' && comparison.value.$case !== 'stringValue' && comparison.value.$case !== 'nullValue') {
            throw scimErrors.invalidFilter(`"${node.attrPath}" is a string: compare it with a quoted value`);
          }
          if (type === 'boolean' && comparison.value.$case !== 'boolValue')
            throw scimErrors.invalidFilter(`"${node.attrPath}" is a boolean: compare it with true or false`);
        }
        return { expr: { $case: 'comparison', value: comparison } };
      }
    }
  };
  return walk(ast);
}

/** Evaluates a value filter (the inside of members[...] or emails[...]) against one element, for PATCH paths. */
export function matchesElement(element: unknown, ast: Ast, caseExact: (sub: string) => boolean): boolean {
  if (!isObject(element)) return false;
  switch (ast.op) {
    case 'and':
      return ast.filters.every((f) => matchesElement(element, f, caseExact));
    case 'or':
      return ast.filters.some((f) => matchesElement(element, f, caseExact));
    case 'not':
      return !matchesElement(element, ast.filter, caseExact);
    case '[]':
      throw scimErrors.invalidPath('Value paths cannot be nested');
    default: {
      const sub = ast.attrPath.split('.').pop()!.toLowerCase();
      const key = Object.keys(element).find((k) => k.toLowerCase() === sub);
      const actual = key === undefined ? undefined : element[key];
      const op = ast.op.toLowerCase();
      if (op === 'pr') return actual !== undefined && actual !== null && actual !== '';
      let expected = (ast as { compValue?: unknown }).compValue;
      let value = actual;
      if (typeof value === 'boolean' && typeof expected === 'string' && /^(true|false)$/i.test(expected))
        expected = expected.toLowerCase() === 'true';
      if (typeof value === 'string' && typeof expected === 'string' && !caseExact(sub)) {
        value = value.toLowerCase();
        expected = expected.toLowerCase();
      }
      switch (op) {
        case 'eq':
          return value === expected;
        case 'ne':
          return value !== expected;
        case 'co':
          return typeof value === 'string' && typeof expected === 'string' && value.includes(expected);
        case 'sw':
          return typeof value === 'string' && typeof expected === 'string' && value.startsWith(expected);
        case 'ew':
          return typeof value === 'string' && typeof expected === 'string' && value.endsWith(expected);
        case 'gt':
          return typeof value === typeof expected && (value as string) > (expected as string);
        case 'ge':
          return typeof value === typeof expected && (value as string) >= (expected as string);
        case 'lt':
          return typeof value === typeof expected && (value as string) < (expected as string);
        case 'le':
          return typeof value === typeof expected && (value as string) <= (expected as string);
        default:
          throw scimErrors.invalidFilter(`Unknown operator "${ast.op}"`);
      }
    }
  }
}
