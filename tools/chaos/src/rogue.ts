// The rogue pod: a process on the same network as the services (here: the same machine) calls their gRPC ports as an
// attacker inside the cluster would — in plaintext, with a certificate of another CA that claims the gateway's
// identity, with the platform's own certificates on methods their component may not call, and with the gateway's
// certificate but no end-user context of the gateway's (none, or one another certificate signed) on the methods that
// act for a user. Every call must be refused before any handler runs (the handshake fails, or PERMISSION_DENIED), and
// nothing may be written.
import { createAuthority, issueCertificate } from '@mileage/pki';
import { drivesV1, groupsV1, scimV1, usersV1 } from '@mileage/proto';
import { createGrpcClient, EndUserSigner, grpcTls, V1_AUDIENCE, type GrpcTlsConfig } from '@mileage/runtime/grpc';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import type { ChaosStack } from './stack';

/** gRPC status codes the attempts expect (grpc-js's numbers; the chaos tool does not depend on grpc-js). */
const UNAVAILABLE = 14;
const PERMISSION_DENIED = 7;

export interface RogueAttempt {
  /** Who calls: plaintext, a foreign CA's certificate, or a platform component's own certificate. */
  as: string;
  method: string;
  /** What it must get. */
  expected: number;
  /** What it got: a gRPC status code, or `answered` when the call succeeded. */
  got: number | 'answered';
}

export interface RogueRun {
  attempts: RogueAttempt[];
  /** One line per refusal that did not happen, and per write that did. */
  problems: string[];
}

type Stack = Pick<ChaosStack, 'addresses' | 'pki' | 'grpcConfig' | 'adminUrl' | 'callers'>;

/** Plays the rogue pod against every service of the stack (both replicas of each, round-robin). */
export async function playRoguePod(stack: Stack): Promise<RogueRun> {
  const dir = mkdtempSync(path.join(tmpdir(), 'chaos-rogue-'));
  try {
    return await play(stack, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function play(stack: Stack, dir: string): Promise<RogueRun> {
  // A certificate from another CA, naming the gateway under the platform's own prefix: it trusts the real CA (so it
  // could verify the servers), but no server trusts its issuer.
  const foreignCa = await createAuthority({ commonName: 'rogue CA', validDays: 1 });
  const forged = await issueCertificate(foreignCa, {
    commonName: 'mileage-gateway',
    spiffeId: `${stack.pki.spiffePrefix}gateway`,
    ipAddresses: ['127.0.0.1', '127.0.0.2'],
    validDays: 1,
  });
  writeFileSync(path.join(dir, 'forged.crt'), forged.cert);
  writeFileSync(path.join(dir, 'forged.key'), forged.key, { mode: 0o600 });
  const identities: Record<string, GrpcTlsConfig> = {
    plaintext: { GRPC_PLAINTEXT: true },
    "another CA's certificate claiming the gateway": {
      GRPC_TLS_CERT_FILE: path.join(dir, 'forged.crt'),
      GRPC_TLS_KEY_FILE: path.join(dir, 'forged.key'),
      GRPC_TLS_CA_FILE: stack.pki.caFile,
      GRPC_TLS_SPIFFE_PREFIX: stack.pki.spiffePrefix,
    },
    gateway: stack.grpcConfig('gateway'),
    operator: stack.grpcConfig('operator'),
  };
  const victim = stack.callers.find((c) => c.groupId === undefined) ?? stack.callers[0]!;
  const team = stack.callers.find((c) => c.groupId !== undefined)!;
  const options = (as: string) => ({
    defaultDeadlineMs: 3_000,
    credentials: grpcTls(identities[as]!).channelCredentials(),
  });
  const clientsOf = (as: string) => ({
    users: createGrpcClient(usersV1.UsersServiceClient, stack.addresses.users, options(as)),
    organizations: createGrpcClient(usersV1.OrganizationsServiceClient, stack.addresses.users, options(as)),
    groups: createGrpcClient(groupsV1.GroupsServiceClient, stack.addresses.groups, options(as)),
    drives: createGrpcClient(drivesV1.DrivesServiceClient, stack.addresses.drives, options(as)),
    scim: createGrpcClient(scimV1.ScimServiceClient, stack.addresses.scim, options(as)),
  });
  type Clients = ReturnType<typeof clientsOf>;
  // An end-user context for the victim, signed with the operator's key: well formed, but not the gateway's.
  const operator = stack.grpcConfig('operator');
  const forgedContext = new EndUserSigner(
    readFileSync(operator.GRPC_TLS_CERT_FILE!),
    readFileSync(operator.GRPC_TLS_KEY_FILE!),
  ).sign({ sub: victim.userId, org: 1, scopes: ['drives_read'], aud: [...V1_AUDIENCE] });
  const call = { organizationId: 1 };
  // What a rogue pod would want: another user's drives, a team's admin role, a new organization, a user deleted.
  const wants: [string, (c: Clients) => Promise<unknown>][] = [
    [
      'DrivesService/ListUserDrives',
      (c) =>
        c.drives.listUserDrives(drivesV1.ListUserDrivesRequest.fromPartial({ userId: victim.userId, limit: 10 }), call),
    ],
    [
      'DrivesService/ListUserDrives with an end-user context the operator signed',
      (c) =>
        c.drives.listUserDrives(drivesV1.ListUserDrivesRequest.fromPartial({ userId: victim.userId, limit: 10 }), {
          ...call,
          endUser: forgedContext,
        }),
    ],
    [
      'GroupsService/SetMemberRoles',
      (c) =>
        c.groups.setMemberRoles(
          { groupId: team.groupId!, member: { userId: victim.userId, isAdmin: true, isDriver: true } },
          call,
        ),
    ],
    [
      'OrganizationsService/CreateOrganization',
      (c) => c.organizations.createOrganization({ alias: 'rogue', name: 'R' }),
    ],
    [
      'UsersService/DeleteUser',
      (c) => c.users.deleteUser(usersV1.DeleteUserRequest.fromPartial({ id: victim.userId }), call),
    ],
    [
      'ScimService/HandleRequest',
      (c) => c.scim.handleRequest(scimV1.HandleRequestRequest.fromPartial({ method: 'GET', path: '/Users' }), call),
    ],
    [
      'ScimService/HandleRequests',
      (c) =>
        c.scim.handleRequests(
          scimV1.HandleRequestsRequest.fromPartial({
            clientId: 'mileage-scim',
            organizationId: 1,
            requests: [{ method: 'GET', path: '/Users' }],
          }),
          call,
        ),
    ],
  ];
  // Who may call what, from grpc-authz.ts's table: the gateway's ListUserDrives and HandleRequest(s) act for an end
  // user, whom the gateway did not vouch for here (refused); the operator may call CreateOrganization (not tried).
  const allowed: Record<string, string[]> = {
    gateway: [],
    operator: ['OrganizationsService/CreateOrganization'],
  };
  const attempts: RogueAttempt[] = [];
  for (const as of Object.keys(identities)) {
    const clients = clientsOf(as);
    try {
      for (const [method, run] of wants) {
        if (allowed[as]?.includes(method)) continue;
        const expected = as in allowed ? PERMISSION_DENIED : UNAVAILABLE;
        const got = await run(clients).then(
          () => 'answered' as const,
          (err: { code?: number }) => err.code ?? -1,
        );
        attempts.push({ as, method, expected, got });
      }
    } finally {
      for (const client of Object.values(clients)) client.close();
    }
  }
  const problems = attempts
    .filter((a) => a.got !== a.expected)
    .map((a) => `${a.as} → ${a.method}: ${a.got === 'answered' ? 'answered' : `status ${a.got}`}, not ${a.expected}`);
  problems.push(...(await writesThatHappened(stack.adminUrl, victim.userId, team.groupId!)));
  return { attempts, problems };
}

/** What the attempts would have changed, read from the database as its administrator. */
async function writesThatHappened(adminUrl: string, victim: string, groupId: number): Promise<string[]> {
  const admin = new pg.Client({ connectionString: adminUrl, application_name: 'chaos-rogue' });
  await admin.connect();
  try {
    const problems: string[] = [];
    const org = await admin.query(`SELECT 1 FROM users.organizations WHERE alias = 'rogue'`);
    if (org.rowCount) problems.push('an organization "rogue" was created');
    const role = await admin.query(
      `SELECT 1 FROM groups.team_members WHERE team_id = $1 AND user_id = $2 AND is_admin`,
      [groupId, victim],
    );
    if (role.rowCount) problems.push(`${victim} became an admin of team ${groupId}`);
    const user = await admin.query(`SELECT 1 FROM users.users WHERE id = $1 AND deleted_at IS NULL`, [victim]);
    if (!user.rowCount) problems.push(`${victim} was deleted`);
    return problems;
  } finally {
    await admin.end();
  }
}
