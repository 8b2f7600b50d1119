/**
 * The README's picture of the /docs console (docs/console.png) carries a fingerprint of what it shows: the parts of
 * the OpenAPI document on screen (the title block, the "External API" tag, every operation up to GET /v1/users/me,
 * whose documented example is the response body shown) and the Swagger UI release that draws them. The screenshot
 * writes it into the PNG (a tEXt chunk); picture.test.ts, part of `npm test`, fails when the page's fingerprint no
 * longer matches the picture's, i.e. when the page changed and nobody ran `npm run docs:screenshot`.
 */
import { openApiDocument } from '@mileage/gateway';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { crc32 } from 'node:zlib';

export const PICTURE = path.join(__dirname, '..', '..', '..', 'docs', 'console.png');

/** The operation the picture executes; the picture ends below its response. */
export const PICTURED_PATH = '/v1/users/me';

type Document = ReturnType<typeof openApiDocument>;

/** The document as the screenshot's page serves it, without its stack's random issuer port. */
export function pictureDocument(): Document {
  return openApiDocument({ issuer: 'http://127.0.0.1/realms/mileage' });
}

/** The example the document gives for the pictured call: the fingerprint covers it, the picture shows the real body. */
export function documentedExample(): unknown {
  const get = pictureDocument().paths[PICTURED_PATH]!.get as unknown as {
    responses: Record<string, { content: Record<string, { example?: unknown }> }>;
  };
  return get.responses['200']!.content['application/json']!.example;
}

export function swaggerUiVersion(): string {
  const gateway = path.dirname(require.resolve('@mileage/gateway/package.json'));
  const pkg = require.resolve('swagger-ui-dist/package.json', { paths: [gateway] });
  return (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version;
}

/** sha256 of what the picture shows, independent of key order (a rebuilt document that reads the same keeps it). */
export function pageFingerprint(doc: Document = pictureDocument(), swaggerUi: string = swaggerUiVersion()): string {
  const paths = Object.keys(doc.paths);
  const shown = paths.slice(0, paths.indexOf(PICTURED_PATH) + 1);
  if (shown.length === 0) throw new Error(`the document has no ${PICTURED_PATH}: the picture shows it`);
  const onScreen = {
    swaggerUi,
    openapi: doc.openapi,
    info: doc.info,
    servers: doc.servers,
    security: doc.security,
    tag: doc.tags.find((t) => t.name === 'External API'),
    paths: shown.map((p) => [p, (doc.paths as Record<string, unknown>)[p]]),
  };
  return createHash('sha256').update(canonicalJson(onScreen)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const KEYWORD = 'mileage-page-sha256';
const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

interface Chunk {
  type: string;
  data: Buffer;
  /** The whole chunk: length, type, data and CRC. */
  bytes: Buffer;
}

function chunks(png: Buffer): Chunk[] {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG file');
  const found: Chunk[] = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at);
    const end = at + 12 + length;
    found.push({
      type: png.toString('latin1', at + 4, at + 8),
      data: png.subarray(at + 8, at + 8 + length),
      bytes: png.subarray(at, end),
    });
    at = end;
  }
  return found;
}

function textChunk(keyword: string, text: string): Buffer {
  const typeAndData = Buffer.concat([Buffer.from('tEXt', 'latin1'), Buffer.from(`${keyword}\0${text}`, 'latin1')]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(typeAndData.length - 4);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndData));
  return Buffer.concat([length, typeAndData, crc]);
}

/** The fingerprint written into the picture, if any. */
export function readFingerprint(png: Buffer): string | undefined {
  const prefix = `${KEYWORD}\0`;
  const text = chunks(png)
    .filter((c) => c.type === 'tEXt')
    .map((c) => c.data.toString('latin1'))
    .find((t) => t.startsWith(prefix));
  return text?.slice(prefix.length);
}

/** The picture with `fingerprint` as its only fingerprint, just before the image's end. */
export function withFingerprint(png: Buffer, fingerprint: string): Buffer {
  const kept = chunks(png).filter((c) => !(c.type === 'tEXt' && c.data.toString('latin1').startsWith(`${KEYWORD}\0`)));
  const end = kept.findIndex((c) => c.type === 'IEND');
  if (end < 0) throw new Error('PNG without IEND');
  return Buffer.concat([
    SIGNATURE,
    ...kept.slice(0, end).map((c) => c.bytes),
    textChunk(KEYWORD, fingerprint),
    ...kept.slice(end).map((c) => c.bytes),
  ]);
}
