import type { Knex } from 'knex';

// An organization's alias holds at least one letter (ORGANIZATION_ALIAS_PATTERN in @mileage/runtime): a claim or a
// client binding of digits only is read as an organization id, so an alias `2` would name organization 2 instead.
// Such an alias could never be used as one, yet it may mirror a Keycloak organization whose tokens then land in the
// wrong organization; it is not renamed behind the operator's back. The migration stops, naming each, and runs once
// the operator has given them a letter (docs/operations.md, "Upgrading").
export async function up(knex: Knex): Promise<void> {
  const { rows } = await knex.raw<{ rows: { id: string; alias: string }[] }>(
    `SELECT id, alias FROM organizations WHERE alias !~ '[a-z]' ORDER BY id`,
  );
  if (rows.length > 0)
    throw new Error(
      `organization aliases must contain a letter; rename these first (UPDATE users.organizations SET alias = '…' ` +
        `WHERE id = …), and the same alias in your identity provider: ` +
        rows.map((r) => `organization ${r.id} alias "${r.alias}"`).join(', '),
    );
  await knex.raw(`
    ALTER TABLE organizations DROP CONSTRAINT IF EXISTS organizations_alias_has_letter,
      ADD CONSTRAINT organizations_alias_has_letter CHECK (alias ~ '[a-z]')
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE organizations DROP CONSTRAINT IF EXISTS organizations_alias_has_letter`);
}
