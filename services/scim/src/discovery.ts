import { MAX_RESULTS } from './context';
import { scimErrors } from './errors';
import {
  COMMON_ATTRIBUTES,
  ENTERPRISE_ATTRIBUTES,
  ENTERPRISE_SCHEMA,
  GROUP_ATTRIBUTES,
  GROUP_SCHEMA,
  LIST_SCHEMA,
  schemaResource,
  USER_ATTRIBUTES,
  USER_SCHEMA,
} from './schemas';

/** /ServiceProviderConfig, /ResourceTypes and /Schemas (RFC 7644 §4): exactly what this service does. */
export class Discovery {
  constructor(private readonly baseUrl: string) {}

  serviceProviderConfig() {
    return {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
      documentationUri: `${this.baseUrl.replace(/\/scim\/v2$/, '')}/docs`,
      patch: { supported: true },
      bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
      filter: { supported: true, maxResults: MAX_RESULTS },
      changePassword: { supported: false },
      sort: { supported: false },
      etag: { supported: true },
      authenticationSchemes: [
        {
          type: 'oauthbearertoken',
          name: 'OAuth Bearer Token',
          description:
            'An access token of the realm carrying the scope "scim" (client-credentials grant of the provisioning client).',
          specUri: 'https://www.rfc-editor.org/info/rfc6750',
          primary: true,
        },
      ],
      meta: { resourceType: 'ServiceProviderConfig', location: `${this.baseUrl}/ServiceProviderConfig` },
    };
  }

  private resourceTypeList() {
    return [
      {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
        id: 'User',
        name: 'User',
        endpoint: '/Users',
        description: 'A platform user (a driver or group admin).',
        schema: USER_SCHEMA,
        schemaExtensions: [{ schema: ENTERPRISE_SCHEMA, required: false }],
        meta: { resourceType: 'ResourceType', location: `${this.baseUrl}/ResourceTypes/User` },
      },
      {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
        id: 'Group',
        name: 'Group',
        endpoint: '/Groups',
        description: 'A team of the platform. Teams are created by the platform; SCIM manages their name and members.',
        schema: GROUP_SCHEMA,
        meta: { resourceType: 'ResourceType', location: `${this.baseUrl}/ResourceTypes/Group` },
      },
    ];
  }

  private schemaList() {
    return [
      schemaResource(
        USER_SCHEMA,
        'User',
        'User Account',
        [...COMMON_ATTRIBUTES.filter((a) => a.name !== 'meta'), ...USER_ATTRIBUTES],
        this.baseUrl,
      ),
      schemaResource(
        ENTERPRISE_SCHEMA,
        'EnterpriseUser',
        'Enterprise User (kept as sent)',
        ENTERPRISE_ATTRIBUTES,
        this.baseUrl,
      ),
      schemaResource(
        GROUP_SCHEMA,
        'Group',
        'Group (a team of the platform)',
        [...COMMON_ATTRIBUTES.filter((a) => a.name !== 'meta'), ...GROUP_ATTRIBUTES],
        this.baseUrl,
      ),
    ];
  }

  resourceTypes(id?: string) {
    const all = this.resourceTypeList();
    if (id === undefined) return list(all);
    const found = all.find((r) => r.id.toLowerCase() === id.toLowerCase());
    if (!found) throw scimErrors.notFound(`No resource type ${id}`);
    return found;
  }

  schemas(id?: string) {
    const all = this.schemaList();
    if (id === undefined) return list(all);
    const found = all.find((s) => s.id.toLowerCase() === id.toLowerCase());
    if (!found) throw scimErrors.notFound(`No schema ${id}`);
    return found;
  }
}

function list(resources: unknown[]) {
  return {
    schemas: [LIST_SCHEMA],
    totalResults: resources.length,
    startIndex: 1,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}
