// The SCIM resources this service serves are declared once in @mileage/scim-domain; this adds SCIM's message URNs.
export { ENTERPRISE_SCHEMA, findAttribute, GROUP_SCHEMA, USER_SCHEMA, type Attribute } from '@mileage/scim-domain';

export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
