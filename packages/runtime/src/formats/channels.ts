/**
 * The Redis pub/sub channel on which a revoked SCIM secret token's id is announced to every gateway replica
 * (gateway/src/scim-token-revocations.ts); the operator's offboarding announces its organization's tokens there too.
 */
export const SCIM_TOKEN_REVOCATIONS_CHANNEL = 'mileage:gateway:scim-token-revocations';
