import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { POINT_COST, reportedDrivesPageCost, scimRequestCost, userDrivesPageCost } from './request-cost';

const list = (query: Record<string, string>) => scimRequestCost('GET', '/Users', new URLSearchParams(query).toString());

describe('request cost', () => {
  test('point reads and writes cost one unit', () => {
    assert.equal(scimRequestCost('GET', '/Users/AliceAdm01', 'filter=x%20co%20%22y%22'), POINT_COST);
    assert.equal(scimRequestCost('POST', '/Users', ''), POINT_COST);
    assert.equal(scimRequestCost('PATCH', '/Groups/3', ''), POINT_COST);
    assert.equal(scimRequestCost('GET', '/ServiceProviderConfig', ''), POINT_COST);
  });

  test('a SCIM list costs by its page: the default 100, at most the largest page the service answers', () => {
    assert.equal(scimRequestCost('GET', '/users/', ''), 2 + 13);
    assert.equal(scimRequestCost('HEAD', '/Groups', 'count=10'), 2 + 2);
    assert.equal(list({ count: '500' }), 2 + 63);
    assert.equal(list({ count: '100000' }), 2 + 63);
    assert.equal(list({ count: 'lots' }), 2 + 13);
  });

  test("a SCIM list's filter adds half its database cost: nothing much for a lookup, 4 a scan", () => {
    assert.equal(list({ count: '1', filter: 'userName eq "bob@example.com"' }), 2 + 1 + 0);
    // A lookup renders one resource at most, whatever its count.
    assert.equal(list({ filter: 'userName eq "bob@example.com"' }), 2 + 1 + 0);
    assert.equal(list({ filter: 'displayName co "Bob"' }), 2 + 13 + 1);
    assert.equal(list({ count: '1', filter: 'emails.value co "a" or emails.value sw "b"' }), 2 + 1 + 8);
    assert.equal(list({ count: '1', filter: 'emails[value ew "x" and type eq "work"]' }), 2 + 1 + 8);
    // An operator word inside a compared value is no term.
    assert.equal(list({ count: '1', filter: 'displayName eq "a co b"' }), 2 + 1 + 0);
  });

  test('a filter the SCIM service refuses is priced as its bare list: it is answered 400 before any statement', () => {
    const filter = Array.from({ length: 63 }, (_, i) => `emails.value co "user${i}"`).join(' or ');
    assert.equal(list({ filter }), 2);
    // Unparsable: the SCIM service answers 400, but priced as what it would be if it were not.
    assert.equal(list({ count: '1', filter: 'userName eq' }), 3);
  });

  test("drive pages cost by their size, a team's reported drives four times a user's own", () => {
    assert.equal(userDrivesPageCost(20), 3);
    assert.equal(userDrivesPageCost(100), 8);
    assert.equal(userDrivesPageCost(1000), 68);
    assert.equal(reportedDrivesPageCost(20), 6);
    assert.equal(reportedDrivesPageCost(100), 26);
    assert.equal(reportedDrivesPageCost(1000), 251);
  });
});
