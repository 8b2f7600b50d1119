export {
  ACTOR_NOT_ATTESTED,
  attestActor,
  ATTESTATION_REFUSALS,
  ATTESTATION_REPLAYED,
  ATTESTED_HEADERS,
  verifyActorAttestation,
} from './attestation';
export { type CircuitBreakerOptions } from './circuit-breaker';
export {
  EndUserSigner,
  HOP_REFUSALS,
  receivedEndUser,
  SCIM_AUDIENCE,
  type SignedEndUser,
  V1_AUDIENCE,
} from './end-user';
export {
  AppError,
  decodeServiceError,
  errors,
  ORGANIZATION_OFFBOARDING,
  QUERY_TOO_COSTLY,
  type FieldViolation,
  serviceErrorFromStatus,
  toAppError,
  toRpcStatus,
  toStatusObject,
} from './errors';
export {
  ARCHIVE_READ_MEMORY,
  MAX_ARCHIVE_READ,
  ORGANIZATIONS_SERVICE,
  OrganizationsServiceClient,
} from './archive-reads';
export { COMPONENTS } from './grpc-authz';
export {
  type CallSettings,
  createGrpcClient,
  type GeneratedClientConstructor,
  grpcFailureOf,
  HealthClient,
  KEEPALIVE_TIME_MS,
  KEEPALIVE_TIMEOUT_MS,
  LONGEST_CALL_DEADLINE_MS,
  MAX_RECONNECT_BACKOFF_MS,
  type PromiseClient,
  unanswered,
} from './grpc-client';
export {
  type CallContext,
  type GrpcServerHandle,
  type Handlers,
  type ServiceRegistration,
  startGrpcServer,
  type UnaryHandler,
} from './grpc-server';
export {
  checkGrpcTls,
  GRPC_TLS_FILES,
  grpcTls,
  type GrpcTls,
  type GrpcTlsConfig,
  grpcTlsConfigShape,
} from './grpc-tls';
export { callGraph } from './call-graph';
export { chain } from './interceptors/interceptor';
export { organizationScope } from './interceptors/organization';
export { httpAnswer, type HttpAnswer, isInvalidInput, RETRY_AFTER_SECONDS } from './http-status';
export {
  MAX_BATCH_GET_USERS,
  MAX_BATCHED_SCIM_REQUESTS,
  requireListWindow,
  SAFE_SCIM_METHODS,
  slices,
} from './list-window';
export { readMemberUsers } from './member-users';
export { isOrganizationId, requireOrganization } from './organization-metadata';
