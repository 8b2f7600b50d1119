// The spans of an OTLP/HTTP trace export, read by the bench's stand-in collector: the protobuf body the chart's
// exporter sends (http/protobuf) and the JSON one (http/json). Only what the latency breakdown needs is kept.
import { BinaryReader, type WireType } from '@bufbuild/protobuf/wire';

/** A finished span, times in ms since the epoch (µs resolution); `kind` is OTLP's: 1 internal, 2 server, 3 client. */
export interface SpanRecord {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  /** The exporting process's `service.name`. */
  service: string;
  startMs: number;
  endMs: number;
  attributes: Record<string, string | number | boolean>;
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3 } as const;

type Attr = SpanRecord['attributes'];

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
/** ns since the epoch (beyond 2^53) to ms, keeping µs. */
const nsToMs = (ns: bigint) => Number(ns / 1000n) / 1000;

/** Calls `each` for every field of a message; a field it returns true for is skipped. */
function fields(buf: Uint8Array, each: (field: number, wire: WireType, r: BinaryReader) => boolean | void): void {
  const r = new BinaryReader(buf);
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (each(field, wire, r) !== true) continue;
    r.skip(wire, field);
  }
}

/** opentelemetry.proto.common.v1.AnyValue: the scalar values (arrays and maps are not used by our spans). */
function anyValue(buf: Uint8Array): string | number | boolean | undefined {
  let value: string | number | boolean | undefined;
  fields(buf, (field, wire, r) => {
    if (field === 1 && wire === 2) value = r.string();
    else if (field === 2 && wire === 0) value = r.bool();
    else if (field === 3 && wire === 0) value = Number(r.int64());
    else if (field === 4 && wire === 1) value = r.double();
    else return true;
  });
  return value;
}

/** opentelemetry.proto.common.v1.KeyValue into `into`. */
function keyValue(buf: Uint8Array, into: Attr): void {
  let key = '';
  let value: string | number | boolean | undefined;
  fields(buf, (field, wire, r) => {
    if (field === 1 && wire === 2) key = r.string();
    else if (field === 2 && wire === 2) value = anyValue(r.bytes());
    else return true;
  });
  if (value !== undefined) into[key] = value;
}

function span(buf: Uint8Array, service: string): SpanRecord {
  const s: SpanRecord = { traceId: '', spanId: '', name: '', kind: 0, service, startMs: 0, endMs: 0, attributes: {} };
  fields(buf, (field, wire, r) => {
    if (field === 1 && wire === 2) s.traceId = hex(r.bytes());
    else if (field === 2 && wire === 2) s.spanId = hex(r.bytes());
    else if (field === 4 && wire === 2) {
      const parent = r.bytes();
      if (parent.length) s.parentSpanId = hex(parent);
    } else if (field === 5 && wire === 2) s.name = r.string();
    else if (field === 6 && wire === 0) s.kind = r.int32();
    else if (field === 7 && wire === 1) s.startMs = nsToMs(BigInt(r.fixed64()));
    else if (field === 8 && wire === 1) s.endMs = nsToMs(BigInt(r.fixed64()));
    else if (field === 9 && wire === 2) keyValue(r.bytes(), s.attributes);
    else return true;
  });
  return s;
}

/** Calls `each` with every length-delimited field `field` of a message (the repeated messages). */
function each(buf: Uint8Array, field: number, fn: (bytes: Uint8Array) => void): void {
  fields(buf, (f, wire, r) => {
    if (f !== field || wire !== 2) return true;
    fn(r.bytes());
  });
}

/** The spans of an ExportTraceServiceRequest in protobuf (opentelemetry/proto/collector/trace/v1). */
export function decodeTraceRequest(body: Uint8Array): SpanRecord[] {
  const spans: SpanRecord[] = [];
  each(body, 1, (resourceSpans) => {
    // The resource (1) may follow the scope spans (2) on the wire: spans are named once both are read.
    const resource: Attr = {};
    const raw: Uint8Array[] = [];
    each(resourceSpans, 1, (r) => each(r, 1, (kv) => keyValue(kv, resource)));
    each(resourceSpans, 2, (scopeSpans) => each(scopeSpans, 2, (s) => raw.push(s)));
    const service = String(resource['service.name'] ?? '');
    for (const b of raw) spans.push(span(b, service));
  });
  return spans;
}

interface JsonKeyValue {
  key: string;
  value?: { stringValue?: string; boolValue?: boolean; intValue?: number | string; doubleValue?: number };
}

const jsonAttributes = (list: JsonKeyValue[] | undefined): Attr => {
  const out: Attr = {};
  for (const { key, value: v } of list ?? []) {
    const value = v?.stringValue ?? v?.boolValue ?? (v?.intValue !== undefined ? Number(v.intValue) : v?.doubleValue);
    if (value !== undefined) out[key] = value;
  }
  return out;
};

/** The spans of an ExportTraceServiceRequest in OTLP/JSON (ids in hex, times as decimal nanoseconds). */
export function decodeTraceJson(body: unknown): SpanRecord[] {
  const request = body as {
    resourceSpans?: {
      resource?: { attributes?: JsonKeyValue[] };
      scopeSpans?: {
        spans?: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind?: number;
          startTimeUnixNano: string | number;
          endTimeUnixNano: string | number;
          attributes?: JsonKeyValue[];
        }[];
      }[];
    }[];
  };
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const service = String(jsonAttributes(rs.resource?.attributes)['service.name'] ?? '');
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s): SpanRecord => ({
        traceId: s.traceId,
        spanId: s.spanId,
        ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
        name: s.name,
        kind: s.kind ?? 0,
        service,
        startMs: nsToMs(BigInt(s.startTimeUnixNano)),
        endMs: nsToMs(BigInt(s.endTimeUnixNano)),
        attributes: jsonAttributes(s.attributes),
      })),
    );
  });
}
