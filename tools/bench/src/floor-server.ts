// The floor of the architecture: node:http answering a /v1 route with the calls the gateway makes to the owners
// (the platform's gRPC client, mutual TLS with the gateway's certificate, end-user contexts, the account reads of a
// turn batched), and the same JSON bytes — but none of the gateway's own request stack: no Express, token check,
// rate limit, access log, metrics or tracing. Full path against this is what the gateway's stack costs; this against
// the bare server is what the hop costs, which no gateway removes. The caller is the path's user, or for a group's
// page its x-user-id header (as in the bare server); the bench starts it with the gateway's environment. It walks the
// sync team's pages through next_cursor too, which the sync walk measures.
import { AccountLoader } from '@mileage/gateway/account-loader';
import { configSchema } from '@mileage/gateway/config';
import { CursorCodec, driveListFingerprint } from '@mileage/gateway/cursor';
import { groupReportedDrivesPage } from '@mileage/gateway/drive-pages';
import { toUserSchema } from '@mileage/gateway/schemas';
import { ScimReads } from '@mileage/gateway/scim-reads';
import { drivesV1, groupsV1, scimV1, usersV1 } from '@mileage/proto';
import {
  attestActor,
  createGrpcClient,
  grpcTls,
  SCIM_AUDIENCE,
  V1_AUDIENCE,
  type CallSettings,
} from '@mileage/runtime/grpc';
import { loadConfigOrExit } from '@mileage/runtime/config';
import { timestampToIso } from '@mileage/runtime/formats';
import { randomUUID } from 'node:crypto';
import type * as http from 'node:http';
import { Refused, serveAnswers } from './answer-server';

// The gateway's own configuration, from the gateway's environment: its addresses, deadlines, keys and certificate.
const config = loadConfigOrExit(configSchema);
const tls = grpcTls(config);
const clientOf = (deadlineMs: number) => ({ defaultDeadlineMs: deadlineMs, credentials: tls.channelCredentials() });
const client = clientOf(config.GRPC_DEADLINE_MS);
const users = createGrpcClient(usersV1.UsersServiceClient, config.USERS_ADDRESS, client);
const accounts = new AccountLoader(users);
// A page's drivers: only what a driver shows, the drivers of a turn's pages in one call (as the gateway reads them).
const drivers = new AccountLoader(users, usersV1.UserView.USER_VIEW_DRIVER);
const drives = createGrpcClient(drivesV1.DrivesServiceClient, config.DRIVES_ADDRESS, client);
const groups = createGrpcClient(groupsV1.GroupsServiceClient, config.GROUPS_ADDRESS, client);
// SCIM reads of a turn share one HandleRequests call, as the gateway sends them.
const scimClient = createGrpcClient(scimV1.ScimServiceClient, config.SCIM_ADDRESS, clientOf(config.SCIM_DEADLINE_MS));
const scimReads = new ScimReads(scimClient, { inc: () => {} });
const cursors = new CursorCodec(config.CURSOR_SECRET);
// The scopes of the bench's tokens (stack.ts passes them), as the gateway puts the token's into the end-user context.
const SCOPES = (process.env.BENCH_SCOPES ?? '').split(' ').filter(Boolean);
if (SCOPES.length === 0) throw new Error('BENCH_SCOPES is required (the scopes of the bench tokens, stack.ts)');

/** The account the gateway reads for every /v1 request, and the settings of the calls made for it. */
async function account(userId: string): Promise<{ user: usersV1.User; call: CallSettings }> {
  const user = await accounts.load(userId, {});
  if (!user?.active || !(user.organizationId > 0)) throw new Refused(403);
  const org = user.organizationId;
  const endUser = tls.endUserSigner?.sign({ sub: userId, org, scopes: SCOPES, aud: [...V1_AUDIENCE] });
  return { user, call: { organizationId: org, ...(endUser && { endUser }) } };
}

async function userDrives(userId: string, params: URLSearchParams): Promise<Buffer> {
  if (params.has('cursor')) throw new Refused(422); // the bench asks for first pages only
  const { call } = await account(userId);
  const page = await drives.listUserDrives(
    {
      userId,
      limit: Number(params.get('limit') ?? 100),
      classification: drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_BUSINESS,
      sortField: drivesV1.SortField.SORT_FIELD_MODIFIED,
      renderJson: true,
    },
    call,
  );
  const fp = driveListFingerprint({ route: 'user-drives', user: userId }, { classification: 'business', sortField: 'modified' }); // prettier-ignore
  const at = page.nextPosition;
  const next =
    page.hasMore && at?.sortTime
      ? cursors.encode(
          {
            sortTime: timestampToIso(at.sortTime),
            id: at.id,
            // The restore epoch the Drives service read the page in, as the gateway carries it (CONTRACT §8).
            ...(at.restoreEpoch && at.readTime
              ? { epoch: { id: at.restoreEpoch, readAt: timestampToIso(at.readTime) } }
              : {}),
          },
          fp,
        )
      : null;
  return Buffer.concat([
    Buffer.from('{"results":'),
    page.resultsJson,
    Buffer.from(`,"has_more":${page.hasMore},"next_cursor":${JSON.stringify(next)}}`),
  ]);
}

/**
 * A group's reported drives, for its admin, through the gateway's own handler (without its request stack); a next
 * page from its next_cursor, which the gateway's codec checks as the gateway does (the sync walk).
 */
async function reportedDrives(groupId: number, callerId: string, params: URLSearchParams): Promise<Buffer> {
  const fingerprint = driveListFingerprint({ route: 'group-reported', group: groupId }, { sortField: 'modified' });
  const cursor = params.get('cursor');
  const position = cursor === null ? undefined : cursors.decode(cursor, fingerprint);
  if (cursor !== null && !position) throw new Refused(422);
  const { call } = await account(callerId);
  const input = {
    id: groupId,
    params: { limit: Number(params.get('limit') ?? 100), classification: 'business', sortField: 'modified' } as const,
    fingerprint,
    ...(position && { position }),
  };
  const body = await groupReportedDrivesPage(input, callerId, { groups, drives, drivers, cursors }, call);
  return Buffer.concat(body.chunks);
}

/**
 * A SCIM read as the gateway forwards it, for the bench's provisioning client (`mileage-scim`, bound to
 * organization 1 as the bench wires it): attested, under the client's end-user context.
 */
async function scimRead(url: URL): Promise<Buffer> {
  const [clientId, organizationId] = ['mileage-scim', 1];
  const forwarded = {
    method: 'GET',
    path: url.pathname.slice('/scim/v2'.length),
    query: url.search.slice(1),
    headers: {},
    body: Buffer.alloc(0),
    clientId,
    organizationId,
  };
  const requestId = randomUUID();
  const actorAttestation = attestActor(config.ACTOR_ATTESTATION_SECRET, { ...forwarded, actor: clientId, requestId });
  const endUser = tls.endUserSigner?.sign({ client: clientId, org: organizationId, scopes: ['scim'], aud: [...SCIM_AUDIENCE] }); // prettier-ignore
  const answer = await scimReads.send({
    request: { ...forwarded, actorAttestation },
    call: { requestId, ...(endUser && { endUser }) },
  });
  if (answer.status !== 200) throw new Refused(answer.status);
  return Buffer.from(answer.body);
}

function route(req: http.IncomingMessage): Promise<string | Buffer> | undefined {
  const url = new URL(req.url ?? '/', 'http://floor');
  let m = /^\/v1\/users\/([A-Za-z0-9]{10})$/.exec(url.pathname);
  if (m) return account(m[1]!).then(({ user }) => JSON.stringify(toUserSchema(user)));
  m = /^\/v1\/users\/([A-Za-z0-9]{10})\/drives$/.exec(url.pathname);
  if (m) return userDrives(m[1]!, url.searchParams);
  m = /^\/v1\/groups\/(\d{1,18})\/reported-drives$/.exec(url.pathname);
  if (m) return reportedDrives(Number(m[1]), String(req.headers['x-user-id']), url.searchParams);
  if (url.pathname === '/scim/v2/Users') return scimRead(url);
  return undefined;
}

serveAnswers('floor', config.PORT, route);
