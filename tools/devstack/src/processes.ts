import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from '@mileage/runtime/telemetry';
import { StartupProblem } from './preflight';

export interface ManagedProcess {
  name: string;
  child: ChildProcess;
  exited: Promise<number | null>;
}

/** Starts a Node.js process of the stack; its JSON log lines go straight to our stdout. */
export function startProcess(name: string, script: string, env: NodeJS.ProcessEnv, logger: Logger): ManagedProcess {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  logger.info({ process: name, pid: child.pid }, 'started');
  return { name, child, exited };
}

/** SIGTERM, then SIGKILL if the process has not drained within timeoutMs. */
export async function stopProcess(proc: ManagedProcess, timeoutMs: number): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), timeoutMs);
  await proc.exited;
  clearTimeout(timer);
}

/**
 * Polls `probe` until it answers true, the process dies, or timeoutMs passes. A probe may answer why it is not ready
 * (a string); the last answer, or the last failure, is in the error of a timeout.
 */
export async function waitUntilReady(
  proc: ManagedProcess,
  probe: () => Promise<boolean | string>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let died = false;
  let last = 'none answered';
  void proc.exited.then(() => (died = true));
  while (Date.now() < deadline) {
    if (died) {
      const cause = `exited during start-up (status ${proc.child.exitCode})`;
      throw new StartupProblem(proc.name, cause, 'its last log lines above say why');
    }
    const answer = await probe().catch(failureOf);
    if (answer === true) return;
    last = answer === false ? 'not ready' : answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new StartupProblem(
    proc.name,
    `was not ready within ${timeoutMs} ms (its last readiness probe: ${last})`,
    'its log lines above say what it waits for',
  );
}

/** A failed probe as one line: fetch's own message and its cause's (a refused connection, a timeout). */
export function failureOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause instanceof Error ? `${err.message}: ${err.cause.message}` : err.message;
}

/** Whether `url` answers 2xx within a second (a probe: the body is not read, its connection is let go). */
export async function httpOk(url: string): Promise<boolean> {
  return (await httpReady(url)) === true;
}

/** true when `url` answers 2xx within a second; otherwise its status and the start of its body (a readiness report). */
export async function httpReady(url: string): Promise<true | string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
  if (res.ok) {
    await res.body?.cancel();
    return true;
  }
  return `HTTP ${res.status} ${(await res.text()).slice(0, 300)}`;
}
