import { createMileageClient, oauthToken, type MileageClient, type TokenSource } from '@mileage/client';
import * as path from 'node:path';
import { z } from 'zod';

const optional = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

/** The environment of the commands, read once (every problem reported at once, exit 78). */
export const configSchema = z
  .object({
    MILEAGE_API_URL: z.url({ protocol: /^https?$/ }).default('http://127.0.0.1:8080'),
    /** The team whose reported drives `export` and `receive` keep (`organization-export` needs none). */
    MILEAGE_GROUP_ID: z
      .string()
      .regex(/^[1-9]\d{0,17}$/, 'a group id (a positive integer)')
      .optional(),
    /** A bearer token as is (short-lived: for a try-out). */
    MILEAGE_TOKEN: optional,
    /** Or a token endpoint and a grant: a refresh token (production) or a demo user's password (development realm). */
    MILEAGE_TOKEN_URL: z.url().optional(),
    MILEAGE_CLIENT_ID: z.string().default('mileage-dev'),
    MILEAGE_CLIENT_SECRET: optional,
    MILEAGE_REFRESH_TOKEN: optional,
    MILEAGE_USERNAME: optional,
    MILEAGE_PASSWORD: optional,
    PAYROLL_CSV: z.string().default('payroll-drives.csv'),
    /** Where `organization-export` writes the organization's archive (a tar.gz). */
    PAYROLL_ARCHIVE: z.string().default('organization-export.tar.gz'),
    /** Default: the CSV's name with `.state.json`. */
    PAYROLL_STATE: optional,
    WEBHOOK_SECRET: z
      .string()
      .regex(/^whsec_[A-Za-z0-9+/=]{16,}$/, 'the whsec_… secret of the subscription')
      .optional(),
    RECEIVER_HOST: z.string().default('127.0.0.1'),
    RECEIVER_PORT: z.coerce.number().int().min(0).max(65535).default(8090),
    /** The receiver's own sync: at start, after events, and at this interval (default 24 h). */
    PAYROLL_SYNC_INTERVAL_SECONDS: z.coerce.number().int().min(1).default(86_400),
  })
  .superRefine((c, ctx) => {
    const grants = [c.MILEAGE_REFRESH_TOKEN, c.MILEAGE_USERNAME].filter(Boolean).length;
    if (!c.MILEAGE_TOKEN && !c.MILEAGE_TOKEN_URL)
      ctx.addIssue({
        code: 'custom',
        path: ['MILEAGE_TOKEN'],
        message: 'set MILEAGE_TOKEN, or MILEAGE_TOKEN_URL and a grant',
      });
    if (c.MILEAGE_TOKEN_URL && grants !== 1)
      ctx.addIssue({
        code: 'custom',
        path: ['MILEAGE_REFRESH_TOKEN'],
        message:
          'with MILEAGE_TOKEN_URL set exactly one of MILEAGE_REFRESH_TOKEN or MILEAGE_USERNAME (+ MILEAGE_PASSWORD)',
      });
    if (c.MILEAGE_USERNAME && !c.MILEAGE_PASSWORD)
      ctx.addIssue({ code: 'custom', path: ['MILEAGE_PASSWORD'], message: 'required with MILEAGE_USERNAME' });
  });

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

const SECRET = /TOKEN|SECRET|PASSWORD/;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = configSchema.safeParse(env);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? '(environment)');
      const value = env[name];
      const shown = value === undefined ? 'unset' : SECRET.test(name) ? 'set (hidden)' : JSON.stringify(value);
      return `${name}: ${issue.message} (${shown})`;
    }),
  );
}

export const statePath = (c: Config) => c.PAYROLL_STATE ?? `${c.PAYROLL_CSV.replace(/\.csv$/i, '')}.state.json`;
export const csvPath = (c: Config) => path.resolve(c.PAYROLL_CSV);
export const archivePath = (c: Config) => path.resolve(c.PAYROLL_ARCHIVE);

/** What `export` and `receive` read: the team's reported drives (a group admin's token). */
export const REPORTED_DRIVES_SCOPE = 'groups_read_reported_drives';
/** What `organization-export` needs (CONTRACT §8): an organization admin's token with this scope. */
export const ORGANIZATION_EXPORT_SCOPE = 'organization_manage';

export function tokenSource(c: Config, scope = REPORTED_DRIVES_SCOPE, fetchImpl?: typeof fetch): TokenSource {
  if (c.MILEAGE_TOKEN) return c.MILEAGE_TOKEN;
  return oauthToken({
    tokenUrl: c.MILEAGE_TOKEN_URL!,
    clientId: c.MILEAGE_CLIENT_ID,
    ...(c.MILEAGE_CLIENT_SECRET ? { clientSecret: c.MILEAGE_CLIENT_SECRET } : {}),
    grant: c.MILEAGE_REFRESH_TOKEN
      ? { grant_type: 'refresh_token', refresh_token: c.MILEAGE_REFRESH_TOKEN }
      : { grant_type: 'password', username: c.MILEAGE_USERNAME!, password: c.MILEAGE_PASSWORD! },
    scope,
    ...(fetchImpl ? { fetch: fetchImpl } : {}),
  });
}

export function clientFor(c: Config, token: TokenSource = tokenSource(c)): MileageClient {
  return createMileageClient({
    baseUrl: c.MILEAGE_API_URL,
    token,
    userAgent: 'mileage-payroll-sync/1',
  });
}
