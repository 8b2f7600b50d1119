// The bare ceiling: node:http + pg answering each measured /v1 route with the statements the services run
// (prepared, by name), and the same JSON bytes as the gateway — no token, framework, gRPC or protobuf. The caller
// of a group route is named by the x-user-id header (the full path takes it from the verified token).
import { CURRENT_EPOCH_SQL } from '@mileage/drives';
import { CursorCodec, driveListFingerprint, type CursorPosition } from '@mileage/gateway/cursor';
import type * as http from 'node:http';
import { Refused, serveAnswers } from './answer-server';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
// The gateway's own cursor codec, with its key: the bare server's cursors are the gateway's, byte for byte.
const cursors = new CursorCodec(process.env.CURSOR_SECRET);
const scimBaseUrl = process.env.SCIM_BASE_URL ?? '';

const USER_SQL = `SELECT id, user_name, given_name, family_name, formatted_name, display_name, emails, active,
                         external_id, timezone, enterprise, created_at, modified_at, version, deleted_at
                    FROM users.users WHERE id = $1 AND deleted_at IS NULL`;
const USERS_SQL = `SELECT id, user_name, given_name, family_name, formatted_name, display_name, emails, active,
                          external_id, timezone, enterprise, created_at, modified_at, version, deleted_at
                     FROM users.users WHERE id = ANY($1::char(10)[]) AND deleted_at IS NULL`;
const CHECK_ADMIN_SQL = `SELECT EXISTS (SELECT 1 FROM groups.teams WHERE id = $1) AS exists,
                                EXISTS (SELECT 1 FROM groups.team_members WHERE team_id = $1 AND user_id = $2 AND is_admin) AS is_admin`;
const HORIZON_SQL = `SELECT date_trunc('milliseconds', coalesce(min(xact_start), clock_timestamp())) AS horizon
                       FROM pg_stat_activity
                      WHERE datname = current_database() AND usename = current_user AND pid <> pg_backend_pid()
                        AND xact_start IS NOT NULL`;
const DRIVE_COLUMNS = `d.id, d.user_id, d.started_at, d.ended_at, d.distance_amount, d.distance_units,
  d.distance_discounted, d.value_amount, d.value_currency, d.toll_amount, d.toll_currency, d.parking_amount,
  d.parking_currency, d.description, d.entry, d.classification, d.purpose, d.start_location, d.end_location,
  d.created_at, d.modified_at`;
// One upper bound, the lower of the sync horizon and the keyset position, as one row comparison (as the Drives
// service sends it: with two bounds on the column PostgreSQL scanned from the horizon down to a deep position).
const USER_DRIVES_SQL = `SELECT ${DRIVE_COLUMNS}, d.modified_at AS sort_value, d.id AS sort_id FROM drives.drives d
    WHERE d.user_id = $1 AND d.classification = $2 AND (d.modified_at, d.id) < ($3, $4)
    ORDER BY d.modified_at DESC, d.id DESC LIMIT $5`;
const REPORTED_SQL = `SELECT ${DRIVE_COLUMNS}, r.group_id, r.status, r.reported_at, r.modified_at AS report_modified_at,
          r.modified_at AS sort_value, r.drive_id AS sort_id
     FROM drives.drive_reports r JOIN drives.drives d ON d.id = r.drive_id
    WHERE r.group_id = $1 AND (r.modified_at, r.drive_id) < ($2, $3)
    ORDER BY r.modified_at DESC, r.drive_id DESC LIMIT $4`;
const upperBound = (horizon: Date, position: CursorPosition | undefined) =>
  position && Date.parse(position.sortTime) < horizon.getTime()
    ? [position.sortTime, position.id]
    : [horizon, '-9223372036854775808'];
const COMMENTS_SQL = `SELECT id, drive_id, text, user_email, created_at FROM drives.review_comments
                       WHERE organization_id = 1 AND drive_id = ANY($1::bigint[]) ORDER BY drive_id, id`;

// A SCIM `userName eq "…"` lookup as the Users service runs it: userName is unique among an organization's live users,
// so one statement on the per-organization index (organization_id, user_name_key) returns the page and its length is
// the count. (The bench measures organization 1's lookups.)
const SCIM_PAGE_SQL = `SELECT id, user_name, given_name, family_name, formatted_name, display_name, emails, active,
         external_id, timezone, enterprise, scim_attributes, created_at, modified_at, version, deleted_at
    FROM users.users WHERE organization_id = 1 AND deleted_at IS NULL AND user_name_key = lower($1)
   ORDER BY id LIMIT $2 OFFSET $3`;

const query = <T extends pg.QueryResultRow>(name: string, text: string, values: unknown[]) =>
  pool.query<T>({ name, text, values }).then((r) => r.rows);

/* eslint-disable @typescript-eslint/no-explicit-any -- rows as pg returns them */
type Row = Record<string, any>;

interface Email {
  value: string;
  type?: string;
  primary?: boolean;
}

const userSchema = (u: Row) => ({
  id: u.id,
  userName: u.user_name,
  name: { givenName: u.given_name, familyName: u.family_name, formatted: u.formatted_name },
  emails: (u.emails as Email[]).map((e) => ({ value: e.value, type: e.type ?? '', primary: Boolean(e.primary) })),
  active: u.active,
  displayName: u.display_name,
});

const money = (amount: string | null, currency: string | null) =>
  amount !== null && currency !== null ? { amount: Number(amount), currency } : null;
const place = (g: Row | null) =>
  g
    ? {
        name: g.name,
        lat: g.lat ?? null,
        lon: g.lon ?? null,
        time: new Date(g.time).toISOString(), // a Timestamp in the proto: milliseconds, Z
        address: g.address
          ? {
              country: g.address.country ?? '',
              state: g.address.state ?? '',
              city: g.address.city ?? '',
              street: g.address.street ?? '',
              postal_code: g.address.postalCode ?? '',
            }
          : null,
      }
    : null;
const details = (d: Row) => ({
  distance:
    d.distance_amount !== null && d.distance_units !== null
      ? {
          amount: Number(d.distance_amount),
          units: d.distance_units,
          discounted: d.distance_discounted !== null ? Number(d.distance_discounted) : null,
        }
      : null,
  value: money(d.value_amount, d.value_currency),
  toll_fees: money(d.toll_amount, d.toll_currency),
  parking_fees: money(d.parking_amount, d.parking_currency),
  description: d.description,
  entry: d.entry === 'manual' ? 'manual' : 'automatic',
  classification: d.classification,
  purpose: d.purpose,
  start: place(d.start_location),
  end: place(d.end_location),
});
const driveSchema = (d: Row) => ({
  drive_id: Number(d.id),
  created: d.created_at.toISOString(),
  modified: d.modified_at.toISOString(),
  started_at: d.started_at.toISOString(),
  ended_at: d.ended_at.toISOString(),
  ...details(d),
});

// The gateway's cache of zone offsets per quarter hour, so that both do the same work.
const offsetFormats = new Map<string, Intl.DateTimeFormat>();
const offsets = new Map<string, number>();
function offsetHours(timeZone: string, at: Date): number {
  const key = `${timeZone} ${Math.floor(at.getTime() / 900_000)}`;
  let offset = offsets.get(key);
  if (offset === undefined) offsets.set(key, (offset = computeOffsetHours(timeZone, at)));
  return offset;
}
function computeOffsetHours(timeZone: string, at: Date): number {
  let format = offsetFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
    offsetFormats.set(timeZone, format);
  }
  const m = /GMT([+-])(\d{2}):(\d{2})/.exec(format.formatToParts(at).find((p) => p.type === 'timeZoneName')!.value);
  return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) + Number(m[3]) / 60) : 0;
}
function driver(userId: string, u: Row | undefined) {
  const emails = (u?.emails ?? []) as Email[];
  return {
    id: userId,
    name: u
      ? (u.display_name ?? u.formatted_name ?? ([u.given_name, u.family_name].filter(Boolean).join(' ') || null))
      : null,
    email: u ? ((emails.find((e) => e.primary) ?? emails[0])?.value ?? u.user_name) : null,
    status: u?.active ? 'active' : 'inactive',
  };
}

async function liveUser(id: string): Promise<Row> {
  const [u] = await query('bare_user', USER_SQL, [id]);
  if (!u?.active) throw new Refused(403);
  return u;
}

/** The database's restore epoch, read once (the Drives service caches it too): each page's cursor carries it. */
let epoch: Promise<string> | undefined;
const currentEpoch = () => (epoch ??= pool.query<{ epoch: string }>(CURRENT_EPOCH_SQL).then((r) => r.rows[0]!.epoch));

/** The queries read one row past the page: when it is there, the next page starts after the page's last row. */
async function page(rows: Row[], limit: number, fp: string) {
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  const readAt = new Date().toISOString();
  const next =
    rows.length > limit && last
      ? cursors.encode(
          {
            sortTime: last.sort_value.toISOString(),
            id: Number(last.sort_id),
            epoch: { id: await currentEpoch(), readAt },
          },
          fp,
        )
      : null;
  return { rows: shown, hasMore: next !== null, next };
}

async function userDrives(userId: string, params: URLSearchParams): Promise<unknown> {
  await liveUser(userId);
  const limit = Number(params.get('limit') ?? 100);
  const fp = driveListFingerprint(
    { route: 'user-drives', user: userId },
    { classification: 'business', sortField: 'modified' },
  );
  const position = params.has('cursor') ? cursors.decode(params.get('cursor')!, fp) : undefined;
  if (params.has('cursor') && !position) throw new Refused(422);
  const [{ horizon }] = (await query('bare_horizon', HORIZON_SQL, [])) as [Row];
  const values = [userId, 'business', ...upperBound(horizon, position), limit + 1];
  const p = await page(await query('bare_user_drives', USER_DRIVES_SQL, values), limit, fp);
  return { results: p.rows.map(driveSchema), has_more: p.hasMore, next_cursor: p.next };
}

async function reportedDrives(groupId: number, callerId: string, params: URLSearchParams): Promise<unknown> {
  const limit = Number(params.get('limit') ?? 100);
  const fp = driveListFingerprint({ route: 'group-reported', group: groupId }, { sortField: 'modified' });
  const position = params.has('cursor') ? cursors.decode(params.get('cursor')!, fp) : undefined;
  if (params.has('cursor') && !position) throw new Refused(422);
  await liveUser(callerId);
  const [check] = (await query('bare_check_admin', CHECK_ADMIN_SQL, [groupId, callerId])) as [Row];
  if (!check.exists) throw new Refused(404);
  if (!check.is_admin) throw new Refused(403);
  const [{ horizon }] = (await query('bare_horizon', HORIZON_SQL, [])) as [Row];
  const values = [groupId, ...upperBound(horizon, position), limit + 1];
  const p = await page(await query('bare_reported', REPORTED_SQL, values), limit, fp);
  const comments = new Map<string, Row[]>();
  const drivers = new Map<string, Row>();
  if (p.rows.length) {
    for (const c of await query('bare_comments', COMMENTS_SQL, [p.rows.map((r) => r.id)])) {
      const list = comments.get(c.drive_id) ?? [];
      list.push(c);
      comments.set(c.drive_id, list);
    }
    const ids = [...new Set(p.rows.map((r) => r.user_id as string))];
    for (const u of await query('bare_users', USERS_SQL, [ids])) drivers.set(u.id, u);
  }
  return {
    results: p.rows.map((r) => {
      const u = drivers.get(r.user_id);
      return {
        id: String(r.id),
        driver: { ...driver(r.user_id, u), timezone_offset: offsetHours(u?.timezone ?? 'UTC', r.ended_at) },
        details: details(r),
        created: r.reported_at.toISOString(),
        modified: r.report_modified_at.toISOString(),
        status: r.status,
        review_comments: (comments.get(r.id) ?? []).map((c) => ({
          id: String(c.id),
          text: c.text,
          created_at: c.created_at.toISOString(),
          user_email: c.user_email,
        })),
      };
    }),
    has_more: p.hasMore,
    next_cursor: p.next,
  };
}

const SCIM_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const SCIM_ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

/** A user as the SCIM service renders it (RFC 7643 §4.1, attributes in its order). */
function scimUser(u: Row) {
  const { name: extraName, ...extras } = (u.scim_attributes ?? {}) as Row;
  const name: Row = { ...(extraName ?? {}) };
  if (u.formatted_name) name.formatted = u.formatted_name;
  if (u.family_name) name.familyName = u.family_name;
  if (u.given_name) name.givenName = u.given_name;
  const emails = (u.emails as Email[]).map((e) => ({ value: e.value, ...(e.type ? { type: e.type } : {}), primary: Boolean(e.primary) })); // prettier-ignore
  const enterprise = u.enterprise && Object.keys(u.enterprise).length ? u.enterprise : undefined;
  return {
    schemas: enterprise ? [SCIM_USER, SCIM_ENTERPRISE] : [SCIM_USER],
    id: u.id,
    ...(u.external_id ? { externalId: u.external_id } : {}),
    userName: u.user_name,
    ...(Object.keys(name).length ? { name } : {}),
    ...(u.display_name ? { displayName: u.display_name } : {}),
    ...extras,
    ...(emails.length ? { emails } : {}),
    active: u.active,
    timezone: u.timezone,
    ...(enterprise ? { [SCIM_ENTERPRISE]: enterprise } : {}),
    meta: {
      resourceType: 'User',
      created: u.created_at.toISOString(),
      lastModified: u.modified_at.toISOString(),
      location: `${scimBaseUrl}/Users/${u.id}`,
      version: `W/"${Number(u.version)}"`,
    },
  };
}

/** GET /scim/v2/Users?filter=userName eq "…" (the first page of 100, as the SCIM service's default). */
async function scimLookup(params: URLSearchParams): Promise<unknown> {
  const m = /^userName eq "([^"\\]*)"$/.exec(params.get('filter') ?? '');
  if (!m) throw new Refused(400);
  const rows = await query('bare_scim_page', SCIM_PAGE_SQL, [m[1], 100, 0]);
  return {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
    totalResults: rows.length,
    startIndex: 1,
    itemsPerPage: rows.length,
    Resources: rows.map(scimUser),
  };
}

function route(req: http.IncomingMessage): Promise<unknown> | undefined {
  const url = new URL(req.url ?? '/', 'http://bare');
  let m = /^\/v1\/users\/([A-Za-z0-9]{10})$/.exec(url.pathname);
  if (m) return liveUser(m[1]!).then(userSchema);
  m = /^\/v1\/users\/([A-Za-z0-9]{10})\/drives$/.exec(url.pathname);
  if (m) return userDrives(m[1]!, url.searchParams);
  m = /^\/v1\/groups\/(\d{1,18})\/reported-drives$/.exec(url.pathname);
  if (m) return reportedDrives(Number(m[1]), String(req.headers['x-user-id']), url.searchParams);
  if (url.pathname === '/scim/v2/Users') return scimLookup(url.searchParams);
  return undefined;
}

serveAnswers(
  'bare',
  Number(process.env.PORT),
  (req) => route(req)?.then((value) => JSON.stringify(value)),
  () => pool.end(),
);
