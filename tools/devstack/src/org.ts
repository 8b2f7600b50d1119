// `npm run org -- create <alias> <name>`, `admin <userId> on|off`, `offboard <org> [--grace-days N | --now | --cancel]`,
// `offboarding <org>` and `erase-due`: an operator's organization commands over the Users service's
// OrganizationsService (and, for an erasure, every owner's EraseOrganization), from a machine that reaches their gRPC
// ports (npm start's 127.0.0.1:50051…50055, a port-forward to a cluster's Services, or a Job in the cluster;
// USERS_ADDRESS, GROUPS_ADDRESS, DRIVES_ADDRESS, WEBHOOKS_ADDRESS and the GRPC_TLS_* files say where and how: an
// operator's certificate of the installation's CA; against `npm start`, by default the operator certificate of its
// development PKI in DATA_DIR/grpc-pki). No HTTP route does this: organizations are the platform operator's, not a
// customer's.
import { drivesV1, groupsV1, usersV1, webhooksV1 } from '@mileage/proto';
import * as grpc from '@grpc/grpc-js';
import {
  checkGrpcTls,
  createGrpcClient,
  GRPC_TLS_FILES,
  grpcTls,
  grpcTlsConfigShape,
  type PromiseClient,
} from '@mileage/runtime/grpc';
import { env, loadConfigOrExit } from '@mileage/runtime/config';
import {
  Acknowledgements,
  acknowledgementsChannel,
  DEFAULT_ACKNOWLEDGEMENT_TIMEOUT_MS,
  ORGANIZATION_ALIAS_RULE,
  SCIM_TOKEN_REVOCATIONS_CHANNEL,
} from '@mileage/runtime/formats';
import { Redis } from 'ioredis';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { describeOffboarding, eraseOffboarded, type OffboardingClients } from './offboarding';
import { developmentGrpcConfig, ROOT } from './wiring';

export const ORG_USAGE = [
  `usage: npm run org -- create <alias> <name>      a new organization (alias: ${ORGANIZATION_ALIAS_RULE})`,
  '       npm run org -- admin <userId> on|off      make a user an organization admin of their organization, or not',
  '       npm run org -- offboard <org> [--grace-days N | --now]',
  '                                                 suspend an organization (id or alias) now, erase it after N days',
  '                                                 (30 by default), or at once with --now',
  '       npm run org -- offboard <org> --cancel    end the suspension during the grace period',
  '       npm run org -- offboarding <org>          the offboarding, and after the erasure its receipt',
  '       npm run org -- erase-due                  erase every organization whose grace period is over',
].join('\n');

export type OrgCommand =
  | { command: 'create'; alias: string; name: string }
  | { command: 'admin'; userId: string; organizationAdmin: boolean }
  | { command: 'offboard'; organization: string; graceDays?: number; now: boolean }
  | { command: 'cancel'; organization: string }
  | { command: 'offboarding'; organization: string }
  | { command: 'erase-due' };

/** The command of the arguments, or undefined when they are not one (the alias and the name the service checks). */
export function parseOrgCommand(args: readonly string[]): OrgCommand | undefined {
  const [command, first, ...rest] = args;
  if (command === 'create' && first && rest.length > 0) return { command, alias: first, name: rest.join(' ') };
  if (command === 'admin' && first && rest.length === 1 && (rest[0] === 'on' || rest[0] === 'off'))
    return { command, userId: first, organizationAdmin: rest[0] === 'on' };
  if (command === 'offboard' && first && !first.startsWith('--')) {
    if (rest.length === 0) return { command, organization: first, now: false };
    if (rest.length === 1 && rest[0] === '--now') return { command, organization: first, now: true };
    if (rest.length === 1 && rest[0] === '--cancel') return { command: 'cancel', organization: first };
    if (rest.length === 2 && rest[0] === '--grace-days' && /^\d{1,4}$/.test(rest[1]!))
      return { command, organization: first, graceDays: Number(rest[1]), now: false };
    return undefined;
  }
  if (command === 'offboarding' && first && rest.length === 0) return { command, organization: first };
  if (command === 'erase-due' && !first) return { command };
  return undefined;
}

/**
 * The id of an organization named by its id (digits) or its alias. An id is taken as it is: after its erasure the
 * organization is gone, and its offboarding record is what is asked about.
 */
export async function organizationIdOf(
  organizations: PromiseClient<usersV1.OrganizationsServiceClient>,
  organization: string,
): Promise<number> {
  if (/^\d+$/.test(organization)) return Number(organization);
  try {
    const { organization: found } = await organizations.getOrganization({
      key: { $case: 'alias', value: organization },
    });
    return found!.id;
  } catch (err) {
    if ((err as { code?: number }).code === grpc.status.NOT_FOUND)
      throw new Error(`organization "${organization}" not found`);
    throw err;
  }
}

/** The revocation channel's message of an organization whose suspension changed (gateway/src/organization-credentials.ts). */
const ORGANIZATION_MESSAGE = 'organization:';

/**
 * Announces SCIM secret tokens (and organizations' suspensions) on the gateways' revocation channel (REDIS_URL: the
 * gateways' Redis), and waits until every gateway replica that received each one has acted on it (its
 * acknowledgement), so that the command's end is the next request's refusal. Without Redis (one gateway of
 * `npm start`), its cache forgets them within SCIM_TOKEN_CACHE_SECONDS. Returns a warning per message not
 * acknowledged by every replica in time.
 */
export async function announceOnRedis(
  redis: Redis | undefined,
  messages: string[],
  timeoutMs = DEFAULT_ACKNOWLEDGEMENT_TIMEOUT_MS,
): Promise<string[]> {
  if (!redis || messages.length === 0) return [];
  const channel = SCIM_TOKEN_REVOCATIONS_CHANNEL;
  const listener = redis.duplicate();
  const acknowledgements = new Acknowledgements();
  listener.on('message', (_channel: string, message: string) => acknowledgements.heard(message));
  const warnings: string[] = [];
  try {
    await listener.subscribe(acknowledgementsChannel(channel));
    // All at once: a replica that does not acknowledge costs one timeout, not one per message.
    const results = await Promise.all(
      messages.map((message) => acknowledgements.announce(message, () => redis.publish(channel, message), timeoutMs)),
    );
    results.forEach(({ receivers, acknowledged }, i) => {
      if (acknowledged < receivers)
        warnings.push(
          `${messages[i]}: ${acknowledged} of ${receivers} gateway replicas acknowledged within ${timeoutMs} ms`,
        );
    });
  } finally {
    listener.disconnect();
  }
  return warnings;
}

/** Runs an offboarding command; what it prints goes to `out`. */
export async function runOffboardingCommand(
  command: Extract<OrgCommand, { command: 'offboard' | 'cancel' | 'offboarding' | 'erase-due' }>,
  clients: OffboardingClients,
  out: (line: string) => void,
  announceRevocations: (tokenIds: string[]) => Promise<void> = async () => {},
): Promise<void> {
  const { organizations } = clients;
  if (command.command === 'erase-due') {
    const { organizationIds } = await organizations.listDueErasures({});
    for (const id of organizationIds) out(describeOffboarding(await eraseOffboarded(clients, id, out)));
    if (organizationIds.length === 0) out('no organization is due for erasure');
    return;
  }
  const organizationId = await organizationIdOf(organizations, command.organization);
  if (command.command === 'offboarding') {
    out(describeOffboarding((await organizations.getOffboarding({ organizationId })).offboarding!));
  } else if (command.command === 'cancel') {
    await organizations.cancelOffboarding({ organizationId });
    await clients.webhooks.setDeliveriesPaused({ organizationId, paused: false });
    await announceRevocations([`${ORGANIZATION_MESSAGE}${organizationId}`]);
    out(`organization ${organizationId}: offboarding cancelled, its credentials and webhooks work again`);
  } else {
    const existing = await organizations.getOffboarding({ organizationId }).catch(() => undefined);
    // Paused again on every offboard of a suspended organization: a run that stopped before it leaves nothing out.
    // (Not after its erasure: that would leave a row of it behind.)
    if (existing && !existing.offboarding!.erasureFinishedAt)
      await clients.webhooks.setDeliveriesPaused({ organizationId, paused: true });
    if (!existing || !command.now) {
      const { offboarding, scimTokenIds } = await organizations.offboardOrganization({
        organizationId,
        now: command.now,
        ...(command.graceDays !== undefined ? { graceDays: command.graceDays } : {}),
      });
      // The gateways forget the organization's SCIM secret tokens and what they knew of its suspension at once, as on a
      // revocation; asked again, the Users service refuses them.
      await announceRevocations([...scimTokenIds, `${ORGANIZATION_MESSAGE}${organizationId}`]);
      await clients.webhooks.setDeliveriesPaused({ organizationId, paused: true });
      out(describeOffboarding(offboarding!));
    }
    // --now again after an interrupted run continues the erasure where it stopped.
    if (command.now) out(describeOffboarding(await eraseOffboarded(clients, organizationId, out)));
  }
}

/**
 * Without GRPC_TLS_* (and without GRPC_PLAINTEXT), the operator certificate of `npm start`'s development PKI when
 * DATA_DIR holds one: the command then just works against the local stack.
 */
export function withDevelopmentOperator(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const dir = path.join(env.DATA_DIR || path.join(ROOT, '.data'), 'grpc-pki');
  const chosen = ['GRPC_PLAINTEXT', ...GRPC_TLS_FILES].some((name) => env[name] !== undefined);
  if (chosen || !existsSync(path.join(dir, 'operator.crt'))) return env;
  return { ...env, ...developmentGrpcConfig(dir, 'operator') };
}

async function main(): Promise<void> {
  const command = parseOrgCommand(process.argv.slice(2));
  if (!command) {
    process.stderr.write(`${ORG_USAGE}\n`);
    process.exit(2);
  }
  const config = loadConfigOrExit(
    z
      .object({
        USERS_ADDRESS: env.target('127.0.0.1:50051'),
        GROUPS_ADDRESS: env.target('127.0.0.1:50052'),
        DRIVES_ADDRESS: env.target('127.0.0.1:50053'),
        WEBHOOKS_ADDRESS: env.target('127.0.0.1:50055'),
        /** The gateways' Redis, on which an offboarding announces the organization's SCIM secret tokens revoked. */
        REDIS_URL: z.string().optional(),
        DATA_DIR: z.string().default(path.join(ROOT, '.data')),
        ...grpcTlsConfigShape,
      })
      .superRefine(checkGrpcTls),
    withDevelopmentOperator(process.env),
  );
  // Long calls (createGrpcClient): an EraseOrganization call that met its connection's age would otherwise end at the
  // client while its handler still ran, and the call's retry then ran beside it.
  const options = { defaultDeadlineMs: 10_000, credentials: grpcTls(config).channelCredentials(), longCalls: true };
  const organizations = createGrpcClient(usersV1.OrganizationsServiceClient, config.USERS_ADDRESS, options);
  const users = createGrpcClient(usersV1.UsersServiceClient, config.USERS_ADDRESS, options);
  if (command.command !== 'create' && command.command !== 'admin') {
    const webhooks = createGrpcClient(webhooksV1.WebhooksServiceClient, config.WEBHOOKS_ADDRESS, options);
    const clients: OffboardingClients = {
      organizations,
      webhooks,
      owners: {
        groups: createGrpcClient(groupsV1.GroupsServiceClient, config.GROUPS_ADDRESS, options),
        drives: createGrpcClient(drivesV1.DrivesServiceClient, config.DRIVES_ADDRESS, options),
        webhooks,
      },
    };
    const redis = config.REDIS_URL ? new Redis(config.REDIS_URL, { lazyConnect: true }) : undefined;
    try {
      await runOffboardingCommand(
        command,
        clients,
        (line) => process.stdout.write(`${line}\n`),
        async (tokenIds) => {
          for (const warning of await announceOnRedis(redis, tokenIds)) process.stderr.write(`warning: ${warning}\n`);
        },
      );
    } finally {
      redis?.disconnect();
      for (const client of [organizations, users, ...new Set(Object.values(clients.owners))]) client.close();
    }
    return;
  }
  try {
    if (command.command === 'create') {
      const { organization } = await organizations.createOrganization({ alias: command.alias, name: command.name });
      process.stdout.write(`organization ${organization!.id} "${organization!.name}" (alias ${organization!.alias})\n`);
    } else {
      // User ids are global: the user's own organization is the context the role is changed in.
      const { user } = await users.getUser({ id: command.userId, includeDeleted: false });
      const { user: changed } = await organizations.setOrganizationAdmin(
        { userId: command.userId, organizationAdmin: command.organizationAdmin },
        { organizationId: user!.organizationId },
      );
      process.stdout.write(
        `${changed!.id} (${changed!.userName}) of organization ${changed!.organizationId}: ` +
          `${changed!.organizationAdmin ? 'organization admin' : 'not an organization admin'}\n`,
      );
    }
  } finally {
    organizations.close();
    users.close();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`npm run org: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
