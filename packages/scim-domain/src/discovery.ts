// The discovery documents (RFC 7644 §4), derived from the resource declarations: what the SCIM service serves at
// /ServiceProviderConfig, /ResourceTypes and /Schemas, and what the OpenAPI document shows as their examples.
import { schemaAttribute, type Attribute, type ResourceDeclaration, type SchemaDeclaration } from './declaration';

/** Largest page of a list (ServiceProviderConfig filter.maxResults); larger counts are reduced to it. */
export const MAX_RESULTS = 500;
/** The page of a list that names no count. */
export const DEFAULT_COUNT = 100;

/** `baseUrl` is the SCIM base, e.g. http://127.0.0.1:8080/scim/v2. */
export function serviceProviderConfig(baseUrl: string) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: `${baseUrl.replace(/\/scim\/v2$/, '')}/docs`,
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
    meta: { resourceType: 'ServiceProviderConfig', location: `${baseUrl}/ServiceProviderConfig` },
  };
}

export function resourceTypeDocument(resource: ResourceDeclaration, baseUrl: string) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
    id: resource.name,
    name: resource.name,
    endpoint: resource.endpoint,
    description: resource.description,
    schema: resource.schema.id,
    ...(resource.extensions.length
      ? { schemaExtensions: resource.extensions.map((e) => ({ schema: e.id, required: false })) }
      : {}),
    meta: { resourceType: 'ResourceType', location: `${baseUrl}/ResourceTypes/${resource.name}` },
  };
}

/**
 * A schema resource of /Schemas; a core schema lists its resource's id and externalId first (`common`: its
 * ResourceDeclaration's; meta is described by RFC 7643 §3.1), an extension none.
 */
export function schemaDocument(schema: SchemaDeclaration, baseUrl: string, common: Attribute[] = []) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id: schema.id,
    name: schema.name,
    description: schema.description,
    attributes: [...common.filter((a) => a.name !== 'meta'), ...schema.attributes].map(schemaAttribute),
    meta: { resourceType: 'Schema', location: `${baseUrl}/Schemas/${schema.id}` },
  };
}

/** Every schema of the resources, each core schema followed by its extensions. */
export function schemaDocuments(resources: ResourceDeclaration[], baseUrl: string) {
  return resources.flatMap((r) => [
    schemaDocument(r.schema, baseUrl, r.common),
    ...r.extensions.map((e) => schemaDocument(e, baseUrl)),
  ]);
}
