// The scopes of /v1, with the words the OpenAPI document and the /docs console show for each: a leaf module, read by
// the route table (each route's scope), the document and the console.
export const V1_SCOPES = {
  users_read: 'Read the caller’s user profile',
  drives_read: 'Read the caller’s drives',
  groups_read: 'Read the groups the caller administers',
  groups_read_reported_drives: 'Read the drives reported to the groups the caller administers',
  webhooks_manage: '(+) Manage the webhooks of the groups the caller administers',
  organization_manage:
    '(+) Manage the SCIM tokens of the caller’s organization and read its provisioning trail (organization admins)',
};
