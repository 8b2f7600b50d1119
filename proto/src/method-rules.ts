import {
  createFileRegistry,
  fromBinary,
  getOption,
  hasOption,
  type DescField,
  type DescMessage,
  type DescMethod,
} from '@bufbuild/protobuf';
import {
  FileDescriptorSetSchema,
  MethodOptions_IdempotencyLevel,
  type FileDescriptorSet,
} from '@bufbuild/protobuf/wkt';

/**
 * The rules of one RPC on the internal hop, as its `.proto` declares them (mileage/rpc/v1/rules.proto): read from the
 * descriptors when the code is generated (proto/gen/method-rules.ts), applied by the runtime's interceptors.
 */
export interface MethodRules<C extends string = string> {
  /** The components whose certificate may call the method. */
  callers: readonly C[];
  /** Set when the method acts for an end user (request fields as the generated code names them: `audit.actor`). */
  endUser?: {
    /** The callers that must bring the gateway's end-user context. */
    from: readonly C[];
    /** The request field that must equal the context's user. */
    userField?: string;
    /** The request field that must equal the context's OAuth client. */
    clientField?: string;
  };
  organization: OrganizationScope;
  /** The request field that names the call's organization, instead of the `x-mileage-organization` metadata. */
  organizationField?: string;
  /** The standard idempotency_level: `no-side-effects` and `idempotent` calls are retried. */
  idempotency: Idempotency;
}

/** mileage.rpc.v1.OrganizationScope (rules.proto says what each means). */
export type OrganizationScope = 'required' | 'across-unless-named' | 'none';
export type Idempotency = 'no-side-effects' | 'idempotent' | 'unknown';

/** What the descriptors declare: the components (mileage.rpc.v1.Component, in order) and every RPC's rules by path. */
export interface DeclaredRules {
  components: string[];
  methods: Record<string, MethodRules>;
}

const RULES_EXTENSION = 'mileage.rpc.v1.rules';
const COMPONENT_ENUM = 'mileage.rpc.v1.Component';
const SCOPE_ENUM = 'mileage.rpc.v1.OrganizationScope';
const IDEMPOTENCY: Record<MethodOptions_IdempotencyLevel, Idempotency> = {
  [MethodOptions_IdempotencyLevel.IDEMPOTENCY_UNKNOWN]: 'unknown',
  [MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS]: 'no-side-effects',
  [MethodOptions_IdempotencyLevel.IDEMPOTENT]: 'idempotent',
};

/** The dynamic value of a (mileage.rpc.v1.rules) option, as @bufbuild/protobuf reads it. */
interface RulesOption {
  callers: number[];
  endUser?: { from: number[]; userField: string; clientField: string };
  organization: number;
  organizationField: string;
}

/**
 * The rules every RPC of the `mileage.*` services declares in `set` (a plugin's request, or the bytes of `buf build`'s
 * image). Throws, naming
 * the method, on one that declares none, an unspecified component or scope, or a field its request does not have: the
 * generation fails rather than a method running without rules.
 */
export function methodRulesOf(set: FileDescriptorSet | Uint8Array): DeclaredRules {
  const registry = createFileRegistry(set instanceof Uint8Array ? fromBinary(FileDescriptorSetSchema, set) : set);
  const extension = registry.getExtension(RULES_EXTENSION);
  const componentEnum = registry.getEnum(COMPONENT_ENUM);
  const scopeEnum = registry.getEnum(SCOPE_ENUM);
  if (!extension || !componentEnum || !scopeEnum) throw new Error(`${RULES_EXTENSION} is not in the descriptors`);
  const components = componentEnum.values.filter((v) => v.number !== 0).map((v) => lowerName(v.name, 'COMPONENT_'));
  const componentOf = (method: DescMethod) => (n: number) => {
    const name = n === 0 ? undefined : componentEnum.value[n]?.name;
    if (!name) throw new Error(`${pathOf(method)}: a caller must name a component (got ${n})`);
    return lowerName(name, 'COMPONENT_');
  };
  const methods: Record<string, MethodRules> = {};
  for (const file of registry.files) {
    if (!file.proto.package.startsWith('mileage.')) continue;
    for (const service of file.services)
      for (const method of service.methods) {
        const path = pathOf(method);
        if (!hasOption(method, extension)) throw new Error(`${path} declares no (${RULES_EXTENSION}) option`);
        const option = getOption(method, extension) as unknown as RulesOption;
        const scope = option.organization === 0 ? undefined : scopeEnum.value[option.organization]?.name;
        if (!scope) throw new Error(`${path}: organization must be a mileage.rpc.v1.OrganizationScope`);
        const component = componentOf(method);
        const rules: MethodRules = {
          callers: option.callers.map(component),
          organization: lowerName(scope, 'ORGANIZATION_SCOPE_').replaceAll('_', '-') as OrganizationScope,
          idempotency: IDEMPOTENCY[method.idempotency],
        };
        if (option.endUser) {
          const { from, userField, clientField } = option.endUser;
          rules.endUser = {
            from: from.map(component),
            ...(userField && { userField: fieldPath(method, method.input, userField) }),
            ...(clientField && { clientField: fieldPath(method, method.input, clientField) }),
          };
        }
        if (option.organizationField)
          rules.organizationField = fieldPath(method, method.input, option.organizationField);
        methods[path] = rules;
      }
  }
  return { components, methods };
}

/** The gRPC path of a method: `/package.Service/Method`. */
function pathOf(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}

/** `COMPONENT_GATEWAY` → `gateway`. */
function lowerName(name: string, prefix: string): string {
  return name.slice(prefix.length).toLowerCase();
}

/** A dotted path of proto field names in `message`, as the generated code names it (`audit.actor`, `userId`). */
function fieldPath(method: DescMethod, message: DescMessage, dotted: string): string {
  const names: string[] = [];
  let current: DescMessage | undefined = message;
  for (const part of dotted.split('.')) {
    const field: DescField | undefined = current?.fields.find((f) => f.name === part);
    if (!field) throw new Error(`${pathOf(method)}: ${message.typeName} has no field ${dotted}`);
    names.push(field.localName);
    current = field.fieldKind === 'message' ? field.message : undefined;
  }
  return names.join('.');
}

/** The TypeScript module proto/gen/method-rules.ts: the declared rules as constants. */
export function renderMethodRules({ components, methods }: DeclaredRules): string {
  const lines = [
    '// Generated from the (mileage.rpc.v1.rules) method options by scripts/protoc-gen-method-rules.js: do not edit.',
    "import type { MethodRules } from '../src/method-rules';",
    '',
    '/** The callers of the internal hop: mileage.rpc.v1.Component, in its order. */',
    `export const COMPONENTS = ${JSON.stringify(components).replaceAll('"', "'").replaceAll(',', ', ')} as const;`,
    'export type Component = (typeof COMPONENTS)[number];',
    '',
    "/** Every RPC's rules, by its gRPC path. */",
    'export const METHOD_RULES: Readonly<Record<string, MethodRules<Component>>> = {',
    ...Object.entries(methods).map(([path, rules]) => `  '${path}': ${JSON.stringify(rules)},`),
    '};',
    '',
  ];
  return lines.join('\n');
}
