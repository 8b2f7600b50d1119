// The filter cost: what identity providers and the conformance suite send stays under the budget; scans of
// multi-valued attributes add up quickly.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  filterCost,
  filterTooCostlyDetail,
  MAX_FILTER_COST,
  MULTI_VALUED_EQUALITY_COST,
  MULTI_VALUED_SCAN_COST,
  SCALAR_COMPARISON_COST,
  SCALAR_PATTERN_COST,
} from './filter-cost';

const orOf = (n: number, term: (i: number) => string) => Array.from({ length: n }, (_, i) => term(i)).join(' or ');

describe('filterCost', () => {
  test('the shapes identity providers, the conformance suite and the benches send cost little', () => {
    const accepted: [string, number][] = [
      ['userName eq "bob@example.com"', SCALAR_COMPARISON_COST],
      ['externalId eq "00u1abc"', SCALAR_COMPARISON_COST],
      ['id eq "AliceAdm01"', SCALAR_COMPARISON_COST],
      ['displayName eq "Fleet"', SCALAR_COMPARISON_COST],
      ['urn:ietf:params:scim:schemas:core:2.0:User:userName eq "x"', SCALAR_COMPARISON_COST],
      ['emails.value eq "a@b.example"', MULTI_VALUED_EQUALITY_COST],
      ['emails eq "a@b.example"', MULTI_VALUED_EQUALITY_COST],
      ['emails[type eq "work" and value eq "a@b.example"]', 2 * MULTI_VALUED_SCAN_COST],
      ['id eq "G1" and members[value eq "U1"]', SCALAR_COMPARISON_COST + MULTI_VALUED_SCAN_COST],
      ['title sw "Dr" and userName ew "@example.com"', 2 * SCALAR_PATTERN_COST],
      ['meta.lastModified gt "2026-01-01T00:00:00Z"', SCALAR_COMPARISON_COST],
      ['not (active eq true)', SCALAR_COMPARISON_COST],
    ];
    for (const [text, cost] of accepted) {
      assert.equal(filterCost(text), cost, text);
      assert.ok(cost <= MAX_FILTER_COST, text);
    }
    assert.equal(filterCost(orOf(64, (i) => `userName eq "u${i}"`)), 64, 'an or of 64 indexed lookups fits');
  });

  test('unindexed comparisons on multi-valued attributes cost the most; 63 of them are far over the budget', () => {
    assert.equal(filterCost('emails.value co "x"'), MULTI_VALUED_SCAN_COST);
    assert.equal(filterCost('Emails.Value SW "x"'), MULTI_VALUED_SCAN_COST, 'names and operators in any case');
    assert.equal(filterCost('phoneNumbers pr'), MULTI_VALUED_SCAN_COST);
    assert.equal(filterCost('emails.type eq "work"'), MULTI_VALUED_SCAN_COST, 'no index on the type');
    assert.equal(filterCost('members[value eq "U1"]'), MULTI_VALUED_SCAN_COST);
    const flood = orOf(63, (i) => `emails.value co "user${i}"`);
    assert.equal(filterCost(flood), 63 * MULTI_VALUED_SCAN_COST);
    assert.ok(filterCost(flood)! > MAX_FILTER_COST);
    assert.ok(filterCost(orOf(9, (i) => `emails.value co "u${i}"`))! > MAX_FILTER_COST);
  });

  test('an unparsable filter has no cost (the caller answers invalidFilter)', () => {
    assert.equal(filterCost('userName eq'), undefined);
    assert.equal(filterCost('(('), undefined);
  });

  test('the refusal says what costs what and what to do', () => {
    const detail = filterTooCostlyDetail(504);
    assert.match(detail, /costs 504, more than the 64/);
    assert.match(detail, /Split the filter/);
    assert.match(detail, /userName/);
  });
});
