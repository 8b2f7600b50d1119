// Pure functions: filter text → tree (scim2-parse-filter) → the owner's typed Filter, and value filters on elements.
import { filterV1 } from '@mileage/proto';
import { MAX_FILTER_COST, MAX_FILTER_TERMS, MULTI_VALUED_SCAN_COST } from '@mileage/scim-domain';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ScimError } from './errors';
import { matchesElement, MAX_FILTER_LENGTH, parseFilter, toOwnerFilter } from './filter';
import { GROUP_RESOURCE } from './groups';
import { USER_RESOURCE } from './users';

const Op = filterV1.Operator;
const owner = (text: string, schema = USER_RESOURCE.filter) => toOwnerFilter(parseFilter(text), schema);
const comparison = (attribute: string, operator: filterV1.Operator, value?: filterV1.Comparison['value']) => ({
  expr: { $case: 'comparison', value: { attribute, operator, ...(value ? { value } : {}) } },
});

function invalidFilter(run: () => unknown, message: RegExp) {
  assert.throws(run, (err: unknown) => {
    assert.ok(err instanceof ScimError);
    assert.equal(err.status, 400);
    assert.equal(err.scimType, 'invalidFilter');
    assert.match(err.detail, message);
    return true;
  });
}

describe('parseFilter', () => {
  test('parses RFC 7644 filters; syntax errors and overlong filters are invalidFilter', () => {
    assert.deepEqual(parseFilter('userName eq "bob"'), { op: 'eq', attrPath: 'userName', compValue: 'bob' });
    invalidFilter(() => parseFilter('userName eq'), /cannot be parsed/);
    invalidFilter(() => parseFilter(`userName eq "${'x'.repeat(MAX_FILTER_LENGTH)}"`), /longer than 2048/);
  });
});

describe('toOwnerFilter', () => {
  test('attribute names in any case and with the core URN become canonical lower-case paths', () => {
    const expected = comparison('username', Op.OPERATOR_EQ, { $case: 'stringValue', value: 'Bob' });
    assert.deepEqual(owner('USERNAME Eq "Bob"'), expected);
    assert.deepEqual(owner('urn:ietf:params:scim:schemas:core:2.0:User:userName eq "Bob"'), expected);
  });

  test('values are typed by the declaration: "True" is a boolean for active, a string must be quoted', () => {
    assert.deepEqual(
      owner('active eq "True"'),
      comparison('active', Op.OPERATOR_EQ, { $case: 'boolValue', value: true }),
    );
    assert.deepEqual(owner('title pr'), comparison('title', Op.OPERATOR_PR));
    invalidFilter(() => owner('active eq "maybe"'), /boolean/);
    invalidFilter(() => owner('userName eq true'), /string/);
  });

  test('value paths scope their sub-attributes; and / or / not are kept', () => {
    assert.deepEqual(owner('phoneNumbers[type eq "work" and value co "555"]'), {
      expr: {
        $case: 'valuePath',
        value: {
          attribute: 'phonenumbers',
          filter: {
            expr: {
              $case: 'allOf',
              value: {
                filters: [
                  comparison('phonenumbers.type', Op.OPERATOR_EQ, { $case: 'stringValue', value: 'work' }),
                  comparison('phonenumbers.value', Op.OPERATOR_CO, { $case: 'stringValue', value: '555' }),
                ],
              },
            },
          },
        },
      },
    });
    assert.equal(owner('not (title eq "a") or locale eq "b"').expr?.$case, 'anyOf');
    invalidFilter(() => owner('title[value eq "x"]'), /not multi-valued/);
  });

  test('the enterprise extension is named by its URN', () => {
    assert.deepEqual(
      owner('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "Ops"'),
      comparison('urn:ietf:params:scim:schemas:extension:enterprise:2.0:user:department', Op.OPERATOR_EQ, {
        $case: 'stringValue',
        value: 'Ops',
      }),
    );
  });

  test('unfilterable and unknown attributes are refused differently; the term limit is the shared one', () => {
    invalidFilter(() => owner('addresses.locality eq "x"'), /not supported/);
    invalidFilter(() => owner('favouriteColour eq "blue"'), /Unknown attribute/);
    invalidFilter(() => owner('title eq "x"', GROUP_RESOURCE.filter), /Unknown attribute/);
    assert.deepEqual(
      owner('externalId eq "okta-1"', GROUP_RESOURCE.filter),
      comparison('externalid', Op.OPERATOR_EQ, { $case: 'stringValue', value: 'okta-1' }),
    );
    const terms = (n: number) => Array.from({ length: n }, (_, i) => `title eq "${i}"`).join(' or ');
    assert.doesNotThrow(() => owner(terms(MAX_FILTER_TERMS / 2)));
    invalidFilter(() => owner(terms(MAX_FILTER_TERMS)), new RegExp(`more than ${MAX_FILTER_TERMS} terms`));
  });

  test('the cost budget: what identity providers and the conformance suite send passes, scans of addresses do not', () => {
    for (const text of [
      'userName eq "bob@example.com"',
      'externalId eq "00u1abcd"',
      'id eq "AliceAdm01"',
      'emails[type eq "work" and value eq "bob@example.com"]',
      'emails.value eq "bob@example.com"',
      'title sw "Dr" and name.familyName co "son"',
      Array.from({ length: MAX_FILTER_TERMS - 1 }, (_, i) => `userName eq "u${i}"`).join(' or '),
    ])
      assert.doesNotThrow(() => owner(text), text);
    for (const text of ['displayName eq "Fleet"', 'id eq "G1" and members[value eq "AliceAdm01"]'])
      assert.doesNotThrow(() => owner(text, GROUP_RESOURCE.filter), text);
    // 63 terms (64 with the or) are within the term limit: the cost refuses them, and says what to do.
    const flood = Array.from({ length: 63 }, (_, i) => `emails.value co "user${i}@"`).join(' or ');
    invalidFilter(
      () => owner(flood),
      new RegExp(`costs ${63 * MULTI_VALUED_SCAN_COST}, more than the ${MAX_FILTER_COST}`),
    );
    invalidFilter(() => owner(flood), /Split the filter into several requests/);
    const valuePaths = Array.from({ length: 9 }, (_, i) => `emails[type eq "t${i}"]`).join(' or ');
    invalidFilter(() => owner(valuePaths), /more than the 64/);
    // An unknown attribute is told as unknown, however costly the rest.
    invalidFilter(() => owner(`favouriteColour pr or ${flood.replace(/ or [^]*$/, '')}`), /Unknown attribute/);
  });
});

describe('matchesElement', () => {
  const caseExact = (sub: string) => sub === 'value';
  test('evaluates a value filter on one element with the case rule of each sub-attribute', () => {
    const element = { value: 'A@x', type: 'Work', primary: true };
    assert.equal(matchesElement(element, parseFilter('type eq "work"'), caseExact), true);
    assert.equal(matchesElement(element, parseFilter('value eq "a@x"'), caseExact), false);
    assert.equal(matchesElement(element, parseFilter('primary eq "true" and value sw "A"'), caseExact), true);
    assert.equal(matchesElement(element, parseFilter('not (display pr)'), caseExact), true);
    assert.equal(matchesElement('not an object', parseFilter('type pr'), caseExact), false);
  });
});
