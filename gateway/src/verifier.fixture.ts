/** For the gateway's token tests: the verifier settings of the realm as npm start configures it, keys aside. */
export const TEST_ISSUER = 'http://127.0.0.1:8081/realms/mileage';

export const TEST_VERIFIER_OPTIONS = {
  issuer: TEST_ISSUER,
  audience: 'mileage-api',
  algorithms: ['RS256'],
  clockSkewSeconds: 30,
  userIdClaim: 'user_id',
  scopeClaim: 'scope',
};
