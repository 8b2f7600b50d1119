// Access tokens from an OpenID provider's token endpoint (the development one, or Keycloak), for the tools that call
// the stack as its users and its provisioning client do.

/** A user's token by the password grant of the public client `mileage-dev`; rejects when the provider refuses. */
export async function passwordToken(
  issuer: string,
  login: { username: string; password: string; scope: string },
): Promise<string> {
  return token(
    issuer,
    `password grant of ${login.username}`,
    {},
    {
      grant_type: 'password',
      client_id: 'mileage-dev',
      ...login,
    },
  );
}

/** A provisioning client's token (client credentials, scope "scim"): `mileage-scim`'s unless another is named. */
export async function scimClientToken(
  issuer: string,
  clientSecret: string,
  clientId = 'mileage-scim',
): Promise<string> {
  const basic = Buffer.from(`${clientId}:${clientSecret}`).toString('base64');
  return token(
    issuer,
    `client credentials of ${clientId}`,
    { authorization: `Basic ${basic}` },
    { grant_type: 'client_credentials', scope: 'scim' },
  );
}

async function token(issuer: string, what: string, headers: Record<string, string>, form: Record<string, string>) {
  const res = await fetch(`${issuer}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form),
  });
  if (!res.ok) throw new Error(`token (${what}): ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}
