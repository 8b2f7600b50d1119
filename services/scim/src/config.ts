import { env } from '@mileage/runtime/config';
import { z } from 'zod';

/** The SCIM service's own environment variables, on top of every service's (runService parses them together). */
export const configShape = {
  USERS_ADDRESS: env.target('127.0.0.1:50051'),
  GROUPS_ADDRESS: env.target('127.0.0.1:50052'),
  /** Public URL of /scim/v2 as clients reach it (meta.location, Location headers). */
  SCIM_BASE_URL: z
    .url()
    .default('http://127.0.0.1:8080/scim/v2')
    .transform((u) => u.replace(/\/$/, '')),
  GRPC_DEADLINE_MS: env.positiveInt(3_000),
  /** The secret the gateway attests the provisioning client with (its ACTOR_ATTESTATION_SECRET); calls without are refused. */
  ACTOR_ATTESTATION_SECRET: z.string().min(32, 'at least 32 characters'),
  /** While rotating: the secret before, still accepted. */
  ACTOR_ATTESTATION_PREVIOUS_SECRET: z.string().min(32, 'at least 32 characters').optional(),
  /** Largest age (and clock skew) of an attestation, in seconds. */
  ACTOR_ATTESTATION_MAX_AGE_SECONDS: z.coerce.number().int().min(1).max(600).default(60),
  /** Most nonces the replay cache holds; past it the oldest gives way (scim_attestation_replay_evictions_total). */
  ACTOR_ATTESTATION_REPLAY_CACHE_ENTRIES: env.positiveInt(100_000),
};
