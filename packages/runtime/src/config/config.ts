import { z } from 'zod';

/**
 * Parses and validates configuration from environment variables once, at start-up.
 * On failure it throws a ConfigError that lists every offending variable, so a process can
 * print it and exit before doing anything else.
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const name = issue.path.join('.') || '(environment)';
    const value = env[String(issue.path[0])];
    const shown = value === undefined ? 'unset' : isSecretName(name) ? 'set (hidden)' : JSON.stringify(value);
    return `${name}: ${issue.message} (${shown})`;
  });
  throw new ConfigError(problems);
}

/** Runs `fn` and, on a ConfigError, prints the problems and exits with status 78 (EX_CONFIG). */
export function loadConfigOrExit<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  try {
    return loadConfig(schema, env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78);
    }
    throw err;
  }
}

function isSecretName(name: string): boolean {
  return /SECRET|PASSWORD|TOKEN|KEY|DATABASE_URL|REDIS_URL/i.test(name);
}

/** Reusable field parsers for environment variables. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  positiveInt: (fallback: number) => z.coerce.number().int().positive().default(fallback),
  host: (fallback: string) => z.string().min(1).default(fallback),
  url: () => z.url(),
  optionalUrl: () => z.url().optional(),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  boolean: (fallback: boolean) =>
    z
      .enum(['true', 'false', '1', '0', 'yes', 'no'])
      .default(fallback ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1' || v === 'yes'),
  /** A hostname:port pair, e.g. "127.0.0.1:50051". */
  address: (fallback: string) =>
    z
      .string()
      .regex(/^[^\s:]+:\d{1,5}$/, 'expected host:port')
      .default(fallback),
  /**
   * Where a gRPC client sends its calls: a hostname:port (resolved by DNS; every address it resolves to gets calls
   * round-robin), or grpc-js's static list of replicas, e.g. "ipv4:127.0.0.1:50051,127.0.0.2:50051".
   */
  target: (fallback: string) => grpcTarget().default(fallback),
  /** A gRPC target as `target`, or unset (the caller then has no such dependency). */
  optionalTarget: () => grpcTarget().optional(),
  /** A comma-separated list (blanks around and between items ignored) of at least `min` items, each `valid`. */
  list: (fallback: string, valid: (item: string) => boolean, message: string, min = 0) =>
    z
      .string()
      .default(fallback)
      .transform((v) =>
        v
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean),
      )
      .refine((list) => list.length >= min && list.every(valid), { message }),
};

function grpcTarget() {
  return z
    .string()
    .regex(
      /^(?:[^\s:,]+:\d{1,5}|ipv4:\d{1,3}(?:\.\d{1,3}){3}:\d{1,5}(?:,\d{1,3}(?:\.\d{1,3}){3}:\d{1,5})*)$/,
      'expected host:port or ipv4:a.b.c.d:port,…',
    );
}

/** Settings every process shares. */
export const commonConfigSchema = z.object({
  LOG_LEVEL: env.logLevel(),
  METRICS_PORT: env.port(0),
  METRICS_HOST: env.host('127.0.0.1'),
  SHUTDOWN_TIMEOUT_MS: env.positiveInt(10_000),
  /**
   * Circuit breaker of each gRPC client (one per downstream service): calls in a row that found the downstream not
   * answering (UNAVAILABLE or DEADLINE_EXCEEDED raised by the client) before its calls are refused at once; 0: off.
   */
  GRPC_CIRCUIT_FAILURE_THRESHOLD: z.coerce.number().int().min(0).max(1_000).default(5),
  /** How long an open circuit refuses calls before it lets one probe call through. */
  GRPC_CIRCUIT_OPEN_MS: z.coerce.number().int().min(100).max(300_000).default(3_000),
});

/** The gRPC clients' circuit breaker settings from a parsed configuration (createGrpcClient's `circuitBreaker`). */
export function circuitBreakerConfig(config: {
  GRPC_CIRCUIT_FAILURE_THRESHOLD: number;
  GRPC_CIRCUIT_OPEN_MS: number;
}): {
  failureThreshold: number;
  openMs: number;
} {
  return { failureThreshold: config.GRPC_CIRCUIT_FAILURE_THRESHOLD, openMs: config.GRPC_CIRCUIT_OPEN_MS };
}
