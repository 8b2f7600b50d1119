// Generated gRPC code (ts-proto, outputServices=grpc-js) re-exported per versioned package.
import * as path from 'node:path';

export * as usersV1 from '../gen/mileage/users/v1/users';
export * as groupsV1 from '../gen/mileage/groups/v1/groups';
export * as drivesV1 from '../gen/mileage/drives/v1/drives';
export * as scimV1 from '../gen/mileage/scim/v1/scim';
export * as scimAuditV1 from '../gen/mileage/scim/v1/audit';
export * as webhooksV1 from '../gen/mileage/webhooks/v1/webhooks';
export * as filterV1 from '../gen/mileage/filter/v1/filter';
export * as rpcStatus from '../gen/google/rpc/status';
export * as rpcErrorDetails from '../gen/google/rpc/error_details';
export { Any } from '../gen/google/protobuf/any';
export { COMPONENTS, METHOD_RULES, type Component } from '../gen/method-rules';
// Types only: reading descriptors (methodRulesOf, @bufbuild/protobuf's registry) is for the generator and tests, which
// import '@mileage/proto/dist/src/method-rules' so that no process loads it.
export type { DeclaredRules, Idempotency, MethodRules, OrganizationScope } from './method-rules';

/** Directory holding the .proto sources, for gRPC server reflection. */
export const PROTO_ROOT = path.resolve(__dirname, '..', '..');

/** Proto files of each service, relative to PROTO_ROOT. */
export const PROTO_FILES = {
  users: 'mileage/users/v1/users.proto',
  groups: 'mileage/groups/v1/groups.proto',
  drives: 'mileage/drives/v1/drives.proto',
  scim: 'mileage/scim/v1/scim.proto',
  webhooks: 'mileage/webhooks/v1/webhooks.proto',
} as const;
