// Generated from the (mileage.rpc.v1.rules) method options by scripts/protoc-gen-method-rules.js: do not edit.
import type { MethodRules } from '../src/method-rules';

/** The callers of the internal hop: mileage.rpc.v1.Component, in its order. */
export const COMPONENTS = ['gateway', 'users', 'groups', 'drives', 'scim', 'webhooks', 'operator', 'seed'] as const;
export type Component = (typeof COMPONENTS)[number];

/** Every RPC's rules, by its gRPC path. */
export const METHOD_RULES: Readonly<Record<string, MethodRules<Component>>> = {
  '/mileage.drives.v1.DrivesService/ListUserDrives': {"callers":["gateway"],"organization":"required","idempotency":"no-side-effects","endUser":{"from":["gateway"],"userField":"userId"}},
  '/mileage.drives.v1.DrivesService/ExportUserDrives': {"callers":["gateway"],"organization":"required","idempotency":"no-side-effects","endUser":{"from":["gateway"],"userField":"userId"}},
  '/mileage.drives.v1.DrivesService/ListReportedDrives': {"callers":["gateway"],"organization":"required","idempotency":"no-side-effects","endUser":{"from":["gateway"]}},
  '/mileage.drives.v1.DrivesService/CreateDrive': {"callers":["seed"],"organization":"required","idempotency":"unknown"},
  '/mileage.drives.v1.DrivesService/UpdateDrive': {"callers":[],"organization":"required","idempotency":"unknown"},
  '/mileage.drives.v1.DrivesService/ReportDrive': {"callers":["seed"],"organization":"required","idempotency":"unknown"},
  '/mileage.drives.v1.DrivesService/ReviewReportedDrive': {"callers":["seed"],"organization":"required","idempotency":"unknown"},
  '/mileage.drives.v1.DrivesService/DeleteDrive': {"callers":["seed"],"organization":"required","idempotency":"unknown"},
  '/mileage.drives.v1.DrivesService/WithdrawReport': {"callers":["seed"],"organization":"required","idempotency":"unknown"},
  '/mileage.groups.v1.GroupsService/GetGroup': {"callers":["gateway","scim"],"organization":"required","idempotency":"no-side-effects","endUser":{"from":["scim"]}},
  '/mileage.groups.v1.GroupsService/ListAdministeredGroups': {"callers":["gateway"],"organization":"required","idempotency":"no-side-effects","endUser":{"from":["gateway"],"userField":"userId"}},
  '/mileage.groups.v1.GroupsService/CheckGroupAdmin': {"callers":["gateway","drives"],"organization":"required","idempotency":"no-side-effects","endUser":{"from":["gateway"],"userField":"userId"}},
  '/mileage.groups.v1.GroupsService/CreateGroup': {"callers":["seed"],"organization":"required","idempotency":"unknown"},
  '/mileage.groups.v1.GroupsService/UpdateGroup': {"callers":["scim"],"organization":"required","idempotency":"unknown","endUser":{"from":["scim"],"clientField":"audit.actor"}},
  '/mileage.groups.v1.GroupsService/PatchGroup': {"callers":["scim"],"organization":"required","idempotency":"unknown","endUser":{"from":["scim"],"clientField":"audit.actor"}},
  '/mileage.groups.v1.GroupsService/SetMemberRoles': {"callers":[],"organization":"required","idempotency":"unknown"},
  '/mileage.groups.v1.GroupsService/RemoveMembers': {"callers":[],"organization":"required","idempotency":"unknown"},
  '/mileage.groups.v1.GroupsService/ListGroups': {"callers":["scim","webhooks"],"organization":"required","idempotency":"no-side-effects","endUser":{"from":["scim"]}},
  '/mileage.groups.v1.GroupsService/ListProvisioningEvents': {"callers":["gateway"],"organization":"required","idempotency":"no-side-effects"},
  '/mileage.scim.v1.ScimService/HandleRequest': {"callers":["gateway"],"organization":"required","idempotency":"unknown","endUser":{"from":["gateway"],"clientField":"clientId"},"organizationField":"organizationId"},
  '/mileage.scim.v1.ScimService/HandleRequests': {"callers":["gateway"],"organization":"required","idempotency":"unknown","endUser":{"from":["gateway"],"clientField":"clientId"},"organizationField":"organizationId"},
  '/mileage.users.v1.UsersService/GetUser': {"callers":["scim","operator"],"organization":"across-unless-named","idempotency":"no-side-effects","endUser":{"from":["scim"]}},
  '/mileage.users.v1.UsersService/BatchGetUsers': {"callers":["gateway","scim"],"organization":"across-unless-named","idempotency":"no-side-effects","endUser":{"from":["scim"]}},
  '/mileage.users.v1.UsersService/CreateUser': {"callers":["scim","seed"],"organization":"required","idempotency":"unknown","endUser":{"from":["scim"],"clientField":"audit.actor"}},
  '/mileage.users.v1.UsersService/UpdateUser': {"callers":["scim"],"organization":"required","idempotency":"unknown","endUser":{"from":["scim"],"clientField":"audit.actor"}},
  '/mileage.users.v1.UsersService/DeleteUser': {"callers":["scim"],"organization":"required","idempotency":"unknown","endUser":{"from":["scim"],"clientField":"audit.actor"}},
  '/mileage.users.v1.UsersService/ListUsers': {"callers":["scim"],"organization":"required","idempotency":"no-side-effects","endUser":{"from":["scim"]}},
  '/mileage.users.v1.UsersService/BatchFindUsersByUserName': {"callers":["scim"],"organization":"required","idempotency":"no-side-effects","endUser":{"from":["scim"]}},
  '/mileage.users.v1.UsersService/ListProvisioningEvents': {"callers":["gateway"],"organization":"required","idempotency":"no-side-effects"},
  '/mileage.users.v1.OrganizationsService/GetOrganization': {"callers":["gateway","seed"],"organization":"none","idempotency":"no-side-effects"},
  '/mileage.users.v1.OrganizationsService/CreateOrganization': {"callers":["operator","seed"],"organization":"none","idempotency":"unknown"},
  '/mileage.users.v1.OrganizationsService/SetOrganizationAdmin': {"callers":["operator","seed"],"organization":"required","idempotency":"unknown"},
  '/mileage.users.v1.OrganizationsService/CreateScimToken': {"callers":["gateway"],"organization":"required","idempotency":"unknown"},
  '/mileage.users.v1.OrganizationsService/ListScimTokens': {"callers":["gateway"],"organization":"required","idempotency":"no-side-effects"},
  '/mileage.users.v1.OrganizationsService/RevokeScimToken': {"callers":["gateway"],"organization":"required","idempotency":"unknown"},
  '/mileage.users.v1.OrganizationsService/ResolveScimToken': {"callers":["gateway"],"organization":"none","idempotency":"idempotent"},
  '/mileage.webhooks.v1.WebhooksService/CreateSubscription': {"callers":["gateway"],"organization":"required","idempotency":"unknown"},
  '/mileage.webhooks.v1.WebhooksService/ListSubscriptions': {"callers":["gateway"],"organization":"required","idempotency":"no-side-effects"},
  '/mileage.webhooks.v1.WebhooksService/DeleteSubscription': {"callers":["gateway"],"organization":"required","idempotency":"unknown"},
  '/mileage.webhooks.v1.WebhooksService/ListDeliveries': {"callers":["gateway"],"organization":"required","idempotency":"no-side-effects"},
  '/mileage.webhooks.v1.WebhooksService/RedeliverDelivery': {"callers":["gateway"],"organization":"required","idempotency":"unknown"},
  '/mileage.webhooks.v1.WebhooksService/PublishEvents': {"callers":["users","drives"],"organization":"none","idempotency":"unknown"},
};
