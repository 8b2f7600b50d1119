// Test support: the methods of the generated services, for the tables that must cover each of them.
import type * as grpc from '@grpc/grpc-js';
import * as proto from '@mileage/proto';

/** Every method of every service definition the proto package generates (`…Service` objects of method paths). */
export function generatedMethods(): grpc.MethodDefinition<unknown, unknown>[] {
  return Object.values(proto)
    .flatMap((module) => Object.entries(module as Record<string, unknown>))
    .filter(([name]) => name.endsWith('Service'))
    .flatMap(([, definition]) => Object.values(definition as grpc.ServiceDefinition));
}
