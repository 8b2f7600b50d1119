import type { filterV1 } from '@mileage/proto';
import {
  checkIfMatch,
  ifMatchVersion,
  paging,
  retryStaleWrite,
  type ComputeDoc,
  type RequestContext,
  type ScimResponse,
} from './context';
import { parseFilter, toOwnerFilter } from './filter';
import { applyPatch, readPatchBody } from './patch';
import { checkSelections, normalizeBody, refuseOtherId, type Doc, type ResourceSchema } from './resource';

/**
 * What the handlers of every resource type do alike: read a list request, and PUT and PATCH (the new document from
 * the body or from the current one, then one write).
 */
export abstract class ResourceHandlers<Resource extends { version: number }> {
  protected abstract readonly schema: ResourceSchema;
  protected abstract readonly kind: 'user' | 'group';

  /** The live resource, or 404 (also for an id the owner could never have assigned). */
  protected abstract load(id: string, ctx: RequestContext): Promise<Resource>;

  /**
   * Reads the resource and runs `write` on it under the version read; a racing change moves the version, and it all
   * runs again (retryStaleWrite) unless the client demanded a version with If-Match (then 412).
   */
  protected atVersion(id: string, ctx: RequestContext, write: (current: Resource) => Promise<ScimResponse>) {
    const demanded = ifMatchVersion(ctx.headers);
    return retryStaleWrite(demanded, async () => {
      const current = await this.load(id, ctx);
      checkIfMatch(demanded, current.version, this.kind);
      return write(current);
    });
  }

  /** Reads the resource, computes the new document and writes it under the version read; `body` as the client sent it. */
  protected abstract change(
    id: string,
    ctx: RequestContext,
    operation: 'replace' | 'patch',
    compute: ComputeDoc,
    body: unknown,
  ): Promise<ScimResponse>;

  /** A list request: the selection checked (unless lenient), the page, and the filter typed for the owner. */
  protected listQuery(ctx: RequestContext): {
    startIndex: number;
    page: { filter?: filterV1.Filter; offset: number; limit: number };
  } {
    if (!ctx.lenientSelection) checkSelections(ctx.query, this.schema);
    const { startIndex, count } = paging(ctx.query);
    const text = ctx.query.get('filter');
    const filter = text ? toOwnerFilter(parseFilter(text), this.schema.filter) : undefined;
    return { startIndex, page: { ...(filter ? { filter } : {}), offset: startIndex - 1, limit: count } };
  }

  /** What a replacement must have beyond the schema's types (a group's display name). */
  protected checkReplacement(_doc: Doc): void {}

  async replace(id: string, body: unknown, ctx: RequestContext): Promise<ScimResponse> {
    refuseOtherId(body, id);
    const doc = normalizeBody(body, this.schema);
    this.checkReplacement(doc);
    return this.change(id, ctx, 'replace', () => doc, body);
  }

  async patch(id: string, body: unknown, ctx: RequestContext): Promise<ScimResponse> {
    const operations = readPatchBody(body);
    return this.change(id, ctx, 'patch', (current) => applyPatch(current, operations, this.schema, id), body);
  }
}
