import { logWritten, type Logger } from '../telemetry/logger';

export interface ShutdownStep {
  name: string;
  run(): Promise<unknown> | unknown;
}

/**
 * On SIGTERM or SIGINT runs the steps in order (stop accepting, drain, close pools, flush telemetry),
 * each bounded by the remaining time, then exits. A second signal exits at once.
 */
export function handleShutdown(logger: Logger, steps: ShutdownStep[], timeoutMs: number): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const deadline = Date.now() + timeoutMs;
    let failed = false;
    for (const step of steps) {
      const left = Math.max(0, deadline - Date.now());
      try {
        await Promise.race([
          Promise.resolve(step.run()),
          new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), left).unref()),
        ]);
      } catch (err) {
        failed = true;
        logger.error({ err, step: step.name }, 'shutdown step failed');
      }
    }
    logger.info('stopped');
    await logWritten(logger);
    process.exit(failed ? 1 : 0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
