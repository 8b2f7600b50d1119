// Checks made before `npm start` starts anything, so that a part that cannot start is named with its cause and fix
// in one line instead of failing half-way with a stack trace (or, as a busy PostgreSQL port once did, with no reason).
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import * as path from 'node:path';

/** A part of the stack that cannot start: printed as one line, `npm start: <part>: <cause>. Fix: <fix>`. */
export class StartupProblem extends Error {
  constructor(
    readonly part: string,
    readonly reason: string,
    readonly fix: string,
  ) {
    super(`npm start: ${part}: ${reason}. Fix: ${fix}`);
    this.name = 'StartupProblem';
  }
}

/** The data folder exists (or can be made) and can be read, written and entered. */
export function checkDataDir(dataDir: string): StartupProblem | undefined {
  const part = `data folder ${dataDir}`;
  const fix = 'correct its owner and permissions, or set DATA_DIR to another folder';
  try {
    if (existsSync(dataDir) && !statSync(dataDir).isDirectory()) {
      return new StartupProblem(part, 'it is not a folder', 'set DATA_DIR to a folder');
    }
    mkdirSync(dataDir, { recursive: true });
    accessSync(dataDir, constants.R_OK | constants.W_OK | constants.X_OK);
    const postgres = path.join(dataDir, 'postgres');
    if (existsSync(postgres)) accessSync(postgres, constants.R_OK | constants.X_OK);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    return new StartupProblem(part, `cannot be used (${code})`, fix);
  }
}

export interface PortUse {
  /** What listens there, e.g. "embedded PostgreSQL". */
  part: string;
  port: number;
  /** The variable that moves it. */
  variable: string;
}

/** Every port that cannot be bound on 127.0.0.1, as one problem each. */
export async function checkPorts(ports: PortUse[]): Promise<StartupProblem[]> {
  const problems: StartupProblem[] = [];
  for (const use of ports) {
    const code = await new Promise<string | undefined>((resolve) => {
      const server = createServer();
      server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? String(err)));
      server.listen({ port: use.port, host: '127.0.0.1', exclusive: true }, () =>
        server.close(() => resolve(undefined)),
      );
    });
    if (!code) continue;
    const cause =
      code === 'EADDRINUSE'
        ? `port ${use.port} is already in use (another npm start, or another program)`
        : `port ${use.port} cannot be listened on (${code})`;
    problems.push(new StartupProblem(use.part, cause, `stop what uses it, or set ${use.variable} to a free port`));
  }
  return problems;
}

function commandOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return undefined;
  }
}

/**
 * A `postmaster.pid` left behind by a PostgreSQL that did not stop cleanly. PostgreSQL ignores one whose process is
 * gone, but refuses to start when the pid now belongs to another process (common after a container or machine
 * restart): that file is removed, since no PostgreSQL holds it. A live PostgreSQL on the folder is a problem.
 */
export function checkPostmasterPid(
  databaseDir: string,
  log: (msg: string) => void,
  isPostgres: (command: string) => boolean = (c) => /postgres/.test(c),
): StartupProblem | undefined {
  const file = path.join(databaseDir, 'postmaster.pid');
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  const command = Number.isInteger(pid) && pid > 0 ? commandOf(pid) : undefined;
  if (command !== undefined && isPostgres(command)) {
    return new StartupProblem(
      'embedded PostgreSQL',
      `another PostgreSQL (pid ${pid}) is running on ${databaseDir}`,
      'stop the other npm start (or that process), or set DATA_DIR to another folder',
    );
  }
  rmSync(file, { force: true });
  log(`removed a stale ${file} (pid ${pid} is ${command === undefined ? 'not running' : 'not PostgreSQL'})`);
  return undefined;
}
