// `npm run org -- create <alias> <name>` and `npm run org -- admin <userId> on|off`: an operator's organization
// commands over the Users service's OrganizationsService, from a machine that reaches its gRPC port (npm start's
// 127.0.0.1:50051, or a port-forward to a cluster's users Service; USERS_ADDRESS and the GRPC_TLS_* files say where and
// how: an operator's certificate of the installation's CA; against `npm start`, by default the operator certificate
// of its development PKI in DATA_DIR/grpc-pki). No HTTP route does this: organizations are the platform operator's,
// not a customer's.
import { usersV1 } from '@mileage/proto';
import { checkGrpcTls, createGrpcClient, GRPC_TLS_FILES, grpcTls, grpcTlsConfigShape } from '@mileage/runtime/grpc';
import { env, loadConfigOrExit } from '@mileage/runtime/config';
import { ORGANIZATION_ALIAS_RULE } from '@mileage/runtime/formats';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { developmentGrpcConfig, ROOT } from './wiring';

export const ORG_USAGE = [
  `usage: npm run org -- create <alias> <name>      a new organization (alias: ${ORGANIZATION_ALIAS_RULE})`,
  '       npm run org -- admin <userId> on|off      make a user an organization admin of their organization, or not',
].join('\n');

export type OrgCommand =
  { command: 'create'; alias: string; name: string } | { command: 'admin'; userId: string; organizationAdmin: boolean };

/** The command of the arguments, or undefined when they are not one (the alias and the name the service checks). */
export function parseOrgCommand(args: readonly string[]): OrgCommand | undefined {
  const [command, first, ...rest] = args;
  if (command === 'create' && first && rest.length > 0) return { command, alias: first, name: rest.join(' ') };
  if (command === 'admin' && first && rest.length === 1 && (rest[0] === 'on' || rest[0] === 'off'))
    return { command, userId: first, organizationAdmin: rest[0] === 'on' };
  return undefined;
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
        DATA_DIR: z.string().default(path.join(ROOT, '.data')),
        ...grpcTlsConfigShape,
      })
      .superRefine(checkGrpcTls),
    withDevelopmentOperator(process.env),
  );
  const options = { defaultDeadlineMs: 10_000, credentials: grpcTls(config).channelCredentials() };
  const organizations = createGrpcClient(usersV1.OrganizationsServiceClient, config.USERS_ADDRESS, options);
  const users = createGrpcClient(usersV1.UsersServiceClient, config.USERS_ADDRESS, options);
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
