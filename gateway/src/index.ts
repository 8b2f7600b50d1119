export { createApp, type AppDeps, type Readiness } from './app';
export { TokenError, TokenVerifier, type Caller, type TokenVerifierOptions } from './auth';
export { configSchema, jwksUrl, type Config } from './config';
export { RateLimits, rateLimitHeaders } from './rate-limit';
export { ACTIVE_WINDOW_MS, OrganizationShares, SHARE_RETRY_AFTER_SECONDS, type FairShareOptions } from './fair-share';
export { reportedDrivesPageCost, scimRequestCost, userDrivesPageCost } from './request-cost';
export { openApiDocument } from './openapi';
export { scimSchemas } from './openapi-scim';
export { CursorCodec, driveListFingerprint, type CursorPosition } from './cursor';
export { gatewayDependencies } from './dependencies';
export { docsRouter } from './docs';
export {
  OrganizationCredentials,
  parseClientOrganizations,
  type OrganizationCredentialsOptions,
} from './organization-credentials';
export { LocalRevocations, RedisRevocations, REVOCATIONS_CHANNEL, type RevocationFeed } from './scim-token-revocations';
export { addressGroup } from './auth';
