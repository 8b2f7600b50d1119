import pino, { type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/**
 * The one JSON log format of every process: pino's line format with `service`; lines about a request
 * carry `request_id` and, when the request is traced, `trace_id` and `span_id` (see traceLogFields).
 */
export function createLogger(options: {
  service: string;
  level?: string;
  destination?: pino.DestinationStream;
}): Logger {
  const pinoOptions: LoggerOptions = {
    level: options.level ?? 'info',
    base: { service: options.service },
    timestamp: pino.stdTimeFunctions.isoTime,
    messageKey: 'msg',
    formatters: { level: (label) => ({ level: label }) },
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        'authorization',
        'password',
        'token',
        'secret',
        '*.password',
        '*.client_secret',
      ],
      censor: '[redacted]',
    },
  };
  if (options.destination) return pino(pinoOptions, options.destination);
  // pino's default destination, made here so that logWritten can wait for it: stdout, written from libuv's thread pool.
  const stdout = pino.destination({ dest: 1, sync: false });
  const logger = pino(pinoOptions, stdout);
  stdoutOf.set(logger, stdout);
  return logger;
}

const stdoutOf = new WeakMap<Logger, ReturnType<typeof pino.destination>>();

/**
 * Resolves once every line this logger has logged is written to stdout, in order, or after timeoutMs. Await it before
 * process.exit: pino's exit-time flush writes what is still queued at once, ahead of a write still waiting for a pool
 * thread, so the last lines of a shutdown came out in the wrong order.
 */
export function logWritten(logger: Logger, timeoutMs = 2_000): Promise<void> {
  const stdout = stdoutOf.get(logger);
  if (!stdout) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    stdout.once('drain', () => {
      clearTimeout(timer);
      resolve();
    });
    // Queued behind every line before it; 'drain' follows once all of them are written.
    stdout.write('');
  });
}
