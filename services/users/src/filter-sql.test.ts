// Pure functions: a typed filter (mileage.filter.v1.Filter) and this owner's filter table in, SQL and bindings out.
import { filterV1 } from '@mileage/proto';
import { AppError } from '@mileage/runtime/grpc';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { filterToSql, MAX_FILTER_TERMS } from '@mileage/scim-domain';
import { USER_FILTER_TABLE } from './users-repo';

const Op = filterV1.Operator;
const cmp = (
  attribute: string,
  operator: filterV1.Operator,
  value?: filterV1.Comparison['value'],
): filterV1.Filter => ({
  expr: { $case: 'comparison', value: { attribute, operator, ...(value ? { value } : {}) } },
});
const str = (value: string) => ({ $case: 'stringValue' as const, value });
const all = (...filters: filterV1.Filter[]): filterV1.Filter => ({ expr: { $case: 'allOf', value: { filters } } });

function invalidFilter(run: () => unknown, message: RegExp) {
  assert.throws(run, (err: unknown) => {
    assert.ok(err instanceof AppError);
    assert.equal(err.details.reason, 'INVALID_FILTER');
    assert.match(err.message, message);
    return true;
  });
}

describe('filterToSql', () => {
  test('no filter matches everything', () => {
    assert.deepEqual(filterToSql(undefined, USER_FILTER_TABLE), { sql: 'true', bindings: [] });
  });

  test('RFC 7643 case rules: userName is compared lower-cased, id and externalId exactly', () => {
    assert.deepEqual(filterToSql(cmp('userName', Op.OPERATOR_EQ, str('Bob@X')), USER_FILTER_TABLE), {
      sql: '(lower(users.user_name) = lower(?))',
      bindings: ['Bob@X'],
    });
    assert.deepEqual(filterToSql(cmp('externalId', Op.OPERATOR_EQ, str('Ab')), USER_FILTER_TABLE), {
      sql: '(users.external_id = ?)',
      bindings: ['Ab'],
    });
  });

  test('co / sw / ew become LIKE patterns with the wildcards of the value escaped', () => {
    assert.deepEqual(filterToSql(cmp('title', Op.OPERATOR_CO, str('50%_off')), USER_FILTER_TABLE), {
      sql: "(lower((users.scim_attributes->>'title')) LIKE lower(?))",
      bindings: ['%50\\%\\_off%'],
    });
    assert.deepEqual(filterToSql(cmp('displayName', Op.OPERATOR_SW, str('A')), USER_FILTER_TABLE).bindings, ['A%']);
  });

  test('pr, null, booleans and dateTimes', () => {
    assert.equal(
      filterToSql(cmp('title', Op.OPERATOR_PR), USER_FILTER_TABLE).sql,
      "((users.scim_attributes->>'title') IS NOT NULL AND (users.scim_attributes->>'title') <> '')",
    );
    assert.equal(
      filterToSql(cmp('displayName', Op.OPERATOR_EQ, { $case: 'nullValue', value: 0 as never }), USER_FILTER_TABLE).sql,
      '(users.display_name IS NULL)',
    );
    assert.deepEqual(
      filterToSql(cmp('active', Op.OPERATOR_EQ, { $case: 'boolValue', value: false }), USER_FILTER_TABLE),
      {
        sql: '(users.active = ?)',
        bindings: [false],
      },
    );
    assert.deepEqual(
      filterToSql(cmp('meta.lastModified', Op.OPERATOR_GT, str('2026-01-31T12:00:00+01:00')), USER_FILTER_TABLE),
      { sql: '(users.modified_at > ?::timestamptz)', bindings: ['2026-01-31T11:00:00.000Z'] },
    );
    invalidFilter(
      () => filterToSql(cmp('active', Op.OPERATOR_GT, { $case: 'boolValue', value: true }), USER_FILTER_TABLE),
      /boolean/,
    );
    invalidFilter(
      () => filterToSql(cmp('meta.created', Op.OPERATOR_EQ, str('yesterday')), USER_FILTER_TABLE),
      /dateTime/,
    );
    // Instants PostgreSQL cannot store and dates that do not exist: invalidFilter, not a 500 or a shifted date.
    for (const bad of ['0000-01-01T00:00:00Z', '2026-02-30T00:00:00Z', '2026-01-01T24:00:00Z', '99999-01-01T00:00:00Z'])
      invalidFilter(() => filterToSql(cmp('meta.created', Op.OPERATOR_GT, str(bad)), USER_FILTER_TABLE), /dateTime/);
    // xsd:dateTime without a zone is read as UTC.
    assert.deepEqual(
      filterToSql(cmp('meta.created', Op.OPERATOR_LT, str('2026-01-31T12:00:00')), USER_FILTER_TABLE).bindings,
      ['2026-01-31T12:00:00.000Z'],
    );
  });

  test('multi-valued attributes: an indexable shortcut for eq, EXISTS over the elements otherwise', () => {
    const shortcut = filterToSql(cmp('emails.value', Op.OPERATOR_EQ, str('a@x')), USER_FILTER_TABLE);
    assert.match(shortcut.sql, /FROM user_email_values e WHERE .* AND e.value_key = lower\(\?\)\)$/);
    assert.deepEqual(shortcut.bindings, ['a@x']);
    const phone = filterToSql(cmp('phoneNumbers.value', Op.OPERATOR_CO, str('555')), USER_FILTER_TABLE);
    assert.equal(
      phone.sql,
      "EXISTS (SELECT 1 FROM jsonb_array_elements(coalesce(users.scim_attributes->'phoneNumbers', '[]'::jsonb)) AS phonenumbers WHERE (lower((phonenumbers->>'value')) LIKE lower(?)))",
    );
    const valuePath: filterV1.Filter = {
      expr: {
        $case: 'valuePath',
        value: {
          attribute: 'emails',
          filter: all(cmp('type', Op.OPERATOR_EQ, str('work')), cmp('emails.value', Op.OPERATOR_EQ, str('a@x'))),
        },
      },
    };
    const narrowed = filterToSql(valuePath, USER_FILTER_TABLE);
    assert.match(narrowed.sql, /^\(EXISTS \(SELECT 1 FROM user_email_values .* AND EXISTS \(SELECT 1 FROM jsonb/);
    assert.deepEqual(narrowed.bindings, ['a@x', 'work', 'a@x']);
  });

  test('not matches what has no value too; and / or group with parentheses', () => {
    const sql = filterToSql(
      {
        expr: {
          $case: 'not',
          value: {
            expr: {
              $case: 'anyOf',
              value: { filters: [cmp('title', Op.OPERATOR_EQ, str('a')), cmp('locale', Op.OPERATOR_EQ, str('b'))] },
            },
          },
        },
      },
      USER_FILTER_TABLE,
    );
    assert.equal(
      sql.sql,
      "(NOT coalesce(((lower((users.scim_attributes->>'title')) = lower(?)) OR (lower((users.scim_attributes->>'locale')) = lower(?))), false))",
    );
  });

  test('names outside the declarations, nested value paths and too many terms are refused', () => {
    invalidFilter(() => filterToSql(cmp('password', Op.OPERATOR_EQ, str('x')), USER_FILTER_TABLE), /unknown attribute/);
    invalidFilter(() => filterToSql(cmp('externalId', Op.OPERATOR_PR), {}), /unknown/);
    const many = all(...Array.from({ length: MAX_FILTER_TERMS }, () => cmp('id', Op.OPERATOR_PR)));
    invalidFilter(() => filterToSql(many, USER_FILTER_TABLE), new RegExp(`more than ${MAX_FILTER_TERMS} terms`));
    invalidFilter(() => filterToSql({}, USER_FILTER_TABLE), /empty filter/);
  });
});
