#!/usr/bin/env node
// A protoc plugin (buf.gen.yaml, strategy all): writes method-rules.ts, the (mileage.rpc.v1.rules) options of every RPC.
// It runs the compiled src/method-rules.ts, so `npm run generate` builds first.
'use strict';
const { create, fromBinary, toBinary } = require('@bufbuild/protobuf');
const {
  CodeGeneratorRequestSchema,
  CodeGeneratorResponseSchema,
  CodeGeneratorResponse_Feature,
  FileDescriptorSetSchema,
} = require('@bufbuild/protobuf/wkt');
const { methodRulesOf, renderMethodRules } = require('../dist/src/method-rules.js');

const chunks = [];
process.stdin.on('data', (chunk) => chunks.push(chunk));
process.stdin.on('end', () => {
  const request = fromBinary(CodeGeneratorRequestSchema, Buffer.concat(chunks));
  let response;
  try {
    const rules = methodRulesOf(create(FileDescriptorSetSchema, { file: request.protoFile }));
    response = create(CodeGeneratorResponseSchema, {
      supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
      file: [{ name: 'method-rules.ts', content: renderMethodRules(rules) }],
    });
  } catch (err) {
    response = create(CodeGeneratorResponseSchema, { error: err instanceof Error ? err.message : String(err) });
  }
  process.stdout.write(toBinary(CodeGeneratorResponseSchema, response));
});
