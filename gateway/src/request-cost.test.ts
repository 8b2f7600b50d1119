import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { drivePageCost, POINT_COST, scimRequestCost } from './request-cost';

const list = (query: Record<string, string>) => scimRequestCost('GET', '/Users', new URLSearchParams(query).toString());

describe('request cost', () => {
  test('point reads and writes cost one unit', () => {
    assert.equal(scimRequestCost('GET', '/Users/AliceAdm01', 'filter=x%20co%20%22y%22'), POINT_COST);
    assert.equal(scimRequestCost('POST', '/Users', ''), POINT_COST);
    assert.equal(scimRequestCost('PATCH', '/Groups/3', ''), POINT_COST);
    assert.equal(scimRequestCost('GET', '/ServiceProviderConfig', ''), POINT_COST);
  });

  test('a SCIM list costs more by its page and its unindexed filter terms', () => {
    assert.equal(scimRequestCost('GET', '/users/', ''), 2);
    assert.equal(scimRequestCost('HEAD', '/Groups', ''), 2);
    assert.equal(list({ filter: 'userName eq "bob@example.com"' }), 2);
    assert.equal(list({ count: '500' }), 7);
    // A count above the largest page is answered with the largest page.
    assert.equal(list({ count: '100000' }), 7);
    assert.equal(list({ count: 'lots' }), 2);
    // A scan of a multi-valued attribute is a unit; patterns and lookups on single-valued ones are less.
    assert.equal(list({ filter: 'emails.value CO "a" or emails.value sw "b" or title pr' }), 4);
    assert.equal(list({ filter: 'emails[value ew "x" and type eq "work"] or nickName pr' }), 4);
    assert.equal(list({ filter: 'userName sw "a" or displayName co "b" or externalId eq "c"' }), 2);
  });

  test('an operator word inside a compared value is no term', () => {
    assert.equal(list({ filter: 'displayName eq "a co b" or title eq "x pr"' }), 2);
  });

  test('a filter the SCIM service refuses is priced as a bare list: it is answered 400 before any statement', () => {
    const filter = Array.from({ length: 63 }, (_, i) => `emails.value co "user${i}"`).join(' or ');
    assert.equal(list({ filter }), 2);
    assert.equal(list({ filter: 'userName eq' }), 2);
    const eight = Array.from({ length: 8 }, (_, i) => `emails.value co "user${i}"`).join(' or ');
    assert.equal(list({ filter: eight }), 10);
  });

  test('a drive page costs one unit up to 249 drives and five at 1,000', () => {
    assert.equal(drivePageCost(1), 1);
    assert.equal(drivePageCost(100), 1);
    assert.equal(drivePageCost(250), 2);
    assert.equal(drivePageCost(1000), 5);
  });
});
