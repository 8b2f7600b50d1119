/**
 * The contract test: every response the gateway's test suites receive is recorded and, when a suite ends,
 * validated against the OpenAPI document the gateway serves (status documented, body matching its schema).
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { RequestHandler } from 'express';

export interface RecordedResponse {
  method: string;
  path: string;
  status: number;
  contentType: string;
  body: string;
}

export function recordResponses(into: RecordedResponse[]): RequestHandler {
  return (req, res, next) => {
    const chunks: Buffer[] = [];
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => unknown;
    const keep = (chunk: unknown) => {
      if (typeof chunk === 'string') chunks.push(Buffer.from(chunk));
      else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk));
    };
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      keep(chunk);
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      if (chunk && typeof chunk !== 'function') keep(chunk);
      return end(chunk, ...rest);
    }) as typeof res.end;
    res.on('finish', () => {
      into.push({
        method: req.method,
        path: req.path,
        status: res.statusCode,
        contentType: String(res.getHeader('content-type') ?? ''),
        body: Buffer.concat(chunks).toString('utf8'),
      });
    });
    next();
  };
}

interface OpenApiResponse {
  $ref?: string;
  content?: Record<string, { schema: object }>;
}

interface OpenApiDoc {
  paths: Record<string, Record<string, { responses: Record<string, OpenApiResponse> }>>;
  components?: { responses?: Record<string, OpenApiResponse> };
}

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** Problems found; empty when every documented-route response matches the document. */
export function checkAgainstOpenApi(doc: OpenApiDoc, records: RecordedResponse[]): string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi');
  const templates = Object.keys(doc.paths).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));
  const problems: string[] = [];
  let checked = 0;
  for (const r of records) {
    if (!r.path.startsWith('/v1/') && !r.path.startsWith('/scim/v2/')) continue;
    const match = templates.find((t) => t.pattern.test(r.path));
    if (!match) continue; // unknown paths answer 404 and are not part of the document
    const operation = doc.paths[match.template]![r.method === 'HEAD' ? 'get' : r.method.toLowerCase()];
    if (!operation) continue; // 405 for methods the route does not have
    let response = operation.responses[String(r.status)];
    // A response described once under components.responses is validated at its own place in the document.
    let responsePath = `openapi#/paths/${escapePointer(match.template)}/${r.method === 'HEAD' ? 'get' : r.method.toLowerCase()}/responses/${r.status}`;
    const shared = response?.$ref?.match(/^#\/components\/responses\/(.+)$/)?.[1];
    if (shared) {
      response = doc.components?.responses?.[shared];
      responsePath = `openapi#/components/responses/${shared}`;
    }
    if (!response) {
      problems.push(`${r.method} ${r.path} → ${r.status}: status not documented for ${match.template}`);
      continue;
    }
    const mediaType = r.path.startsWith('/scim/v2/') ? 'application/scim+json' : 'application/json';
    const schemaPath = `${responsePath}/content/${escapePointer(mediaType)}/schema`;
    if (!response.content?.[mediaType]) continue;
    if (r.method === 'HEAD') continue;
    if (!r.contentType.startsWith(mediaType)) {
      problems.push(`${r.method} ${r.path} → ${r.status}: content type ${r.contentType}`);
      continue;
    }
    const validate = ajv.getSchema(schemaPath);
    if (!validate) {
      problems.push(`no schema at ${schemaPath}`);
      continue;
    }
    checked++;
    if (!validate(JSON.parse(r.body))) {
      problems.push(`${r.method} ${r.path} → ${r.status}: ${ajv.errorsText(validate.errors, { separator: '; ' })}`);
    }
  }
  if (checked === 0 && records.some((r) => r.path.startsWith('/v1/') || r.path.startsWith('/scim/v2/')))
    problems.push('no response was checked');
  return problems;
}
