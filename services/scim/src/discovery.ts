import {
  GROUP_RESOURCE_TYPE,
  resourceTypeDocument,
  schemaDocuments,
  serviceProviderConfig,
  USER_RESOURCE_TYPE,
  type ResourceDeclaration,
} from '@mileage/scim-domain';
import { scimErrors } from './errors';
import { LIST_SCHEMA } from './schemas';

/** /ServiceProviderConfig, /ResourceTypes and /Schemas (RFC 7644 §4): exactly what the declarations say. */
export class Discovery {
  constructor(
    private readonly baseUrl: string,
    private readonly resources: ResourceDeclaration[] = [USER_RESOURCE_TYPE, GROUP_RESOURCE_TYPE],
  ) {}

  serviceProviderConfig() {
    return serviceProviderConfig(this.baseUrl);
  }

  resourceTypes(id?: string) {
    const all = this.resources.map((r) => resourceTypeDocument(r, this.baseUrl));
    if (id === undefined) return list(all);
    const found = all.find((r) => r.id.toLowerCase() === id.toLowerCase());
    if (!found) throw scimErrors.notFound(`No resource type ${id}`);
    return found;
  }

  schemas(id?: string) {
    const all = schemaDocuments(this.resources, this.baseUrl);
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
