// The copies of the gateway's configuration rules that other formats must hold literally: the chart's values and values
// schema, and the development realm's organization mapper. Each is compared with the gateway's own rule.
import { DEFAULT_ORGANIZATION_CLAIM } from '@mileage/runtime/formats';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { parseClientOrganizations } from './organization-credentials';

const ROOT = path.join(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

test('the chart and the development realm name the organization claim the gateway reads by default', () => {
  const values = read('deploy/helm/mileage/values.yaml');
  assert.deepEqual(
    [...values.matchAll(/^\s+organizationClaim:\s*(\S+)\s*$/gm)].map((m) => m[1]),
    [DEFAULT_ORGANIZATION_CLAIM],
  );
  // The development realm's provisioning client of Globex names its organization with a hardcoded-claim mapper.
  const overlay = JSON.parse(read('deploy/keycloak/dev-overlay.json')) as {
    clients: { protocolMappers?: { protocolMapper: string; config: Record<string, string> }[] }[];
  };
  const mapped = overlay.clients
    .flatMap((c) => c.protocolMappers ?? [])
    .filter((m) => m.protocolMapper === 'oidc-hardcoded-claim-mapper')
    .map((m) => m.config['claim.name']);
  assert.deepEqual(mapped, [DEFAULT_ORGANIZATION_CLAIM]);
});

test("the chart's values schema admits the SCIM_CLIENT_ORGANIZATIONS the gateway admits", () => {
  const schema = JSON.parse(read('deploy/helm/mileage/values.schema.json')) as {
    properties: { gateway: { properties: { scimClientOrganizations: { pattern: string } } } };
  };
  const pattern = new RegExp(schema.properties.gateway.properties.scimClientOrganizations.pattern, 'u');
  const gatewayAdmits = (text: string) => {
    try {
      parseClientOrganizations(text);
      return true;
    } catch {
      return false;
    }
  };
  // Up to the alias's 63 characters: past them the schema (RE2, no lookahead) leaves the bound to the gateway's start.
  const references = ['demo', 'acme-2', '2-acme', '-x-', 'a'.repeat(63), `${'9'.repeat(62)}q`, '1', '42', '2', '007'];
  const refused = ['-', '---', '1-2', 'Demo', 'a_b', 'é', '0', ''];
  for (const reference of [...references, ...refused]) {
    const text = `mileage-scim=${reference}, other=demo`;
    assert.equal(pattern.test(text), gatewayAdmits(text), text);
  }
  assert.equal(gatewayAdmits('mileage-scim=demo'), true);
});
