// The bare baseline: node:http + pg answering GET /v1/users/:id with the same query and JSON shape, nothing else.
import * as http from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const SQL = `SELECT id, user_name, given_name, family_name, formatted_name, display_name, emails, active
             FROM users.users WHERE id = $1 AND deleted_at IS NULL`;

const server = http.createServer((req, res) => {
  const match = /^\/v1\/users\/([A-Za-z0-9]{10})$/.exec(req.url ?? '');
  if (req.url === '/healthz') return void res.end('ok');
  if (!match) return void res.writeHead(404).end();
  pool.query(SQL, [match[1]]).then(
    ({ rows }) => {
      const u = rows[0];
      if (!u) return void res.writeHead(404).end();
      const body = JSON.stringify({
        id: u.id,
        userName: u.user_name,
        name: { givenName: u.given_name, familyName: u.family_name, formatted: u.formatted_name },
        emails: (u.emails as { value: string; type?: string; primary?: boolean }[]).map((e) => ({
          value: e.value,
          type: e.type ?? '',
          primary: Boolean(e.primary),
        })),
        active: u.active,
        displayName: u.display_name,
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    },
    () => res.writeHead(500).end(),
  );
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
