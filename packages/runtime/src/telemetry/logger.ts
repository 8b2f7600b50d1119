import pino, { type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/**
 * stdout is written in chunks of at least this many bytes (about a dozen access lines): a write per line was a
 * thread-pool hop and a system call per request, the larger part of the gateway's access log cost.
 */
export const LOG_CHUNK_BYTES = 4096;
/** A quiet process's buffered lines reach stdout within this time; warnings and errors are written at once. */
export const LOG_FLUSH_INTERVAL_MS = 1_000;

const REDACTED_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'password',
  'token',
  'secret',
  '*.password',
  '*.client_secret',
];

/**
 * The one JSON log format of every process: pino's line format with `service`; lines about a request
 * carry `request_id` and, when the request is traced, `trace_id` and `span_id` (see traceLogFields).
 */
export function createLogger(options: {
  service: string;
  level?: string;
  destination?: pino.DestinationStream;
}): Logger {
  // pino's default destination, made here so that logWritten can wait for it: stdout, written from libuv's thread pool.
  const stdout = options.destination
    ? undefined
    : pino.destination({ dest: 1, sync: false, minLength: LOG_CHUNK_BYTES, periodicFlush: LOG_FLUSH_INTERVAL_MS });
  const destination = options.destination ?? stdout!;
  const buffered = isFlushable(destination) ? destination : undefined;
  const format: LoggerOptions = {
    level: options.level ?? 'info',
    base: { service: options.service },
    timestamp: pino.stdTimeFunctions.isoTime,
    messageKey: 'msg',
    formatters: { level: (label) => ({ level: label }) },
    ...(buffered && {
      hooks: {
        logMethod(args, method, level) {
          method.apply(this, args);
          // What an operator is paged for, or what precedes a crash, does not wait in the buffer.
          if (level >= WARN_LEVEL) flushPromptly(buffered);
        },
      },
    }),
  };
  const logger = pino({ ...format, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, destination);
  unredactedOf.set(logger, pino(format, destination));
  if (stdout) stdoutOf.set(logger, stdout);
  return logger;
}

const WARN_LEVEL = pino.levels.values.warn!;

/** `"level":"<label>"` of the levels from warn up, as the format writes them. */
const WARNING_LINE = new RegExp(
  `"level":"(${Object.entries(pino.levels.values)
    .filter(([, value]) => value >= WARN_LEVEL)
    .map(([label]) => label)
    .join('|')})"`,
);

/** Whether a line of this format was logged at warn or above: what the tools keep of a child's output. */
export function isWarningOrWorse(line: string): boolean {
  return WARNING_LINE.test(line);
}

interface Flushable {
  flush(): void;
  once(event: 'drain', listener: () => void): unknown;
}

function isFlushable(stream: object): stream is Flushable {
  const candidate = stream as Partial<Flushable>;
  return typeof candidate.flush === 'function' && typeof candidate.once === 'function';
}

const awaitingDrain = new WeakSet<Flushable>();

/**
 * Writes what is buffered now. A flush during a write does nothing, and the write's end leaves a remainder shorter than
 * a chunk in the buffer: so flush again once that write has drained (one waiting flush per stream, however many lines).
 */
function flushPromptly(stream: Flushable): void {
  flushUnlessClosed(stream);
  if (awaitingDrain.has(stream)) return;
  awaitingDrain.add(stream);
  stream.once('drain', () => {
    awaitingDrain.delete(stream);
    flushUnlessClosed(stream);
  });
}

function flushUnlessClosed(stream: Flushable): void {
  try {
    stream.flush();
  } catch {
    // Closed at exit, after pino's own final flush: nothing is left to write.
  }
}

const stdoutOf = new WeakMap<Logger, ReturnType<typeof pino.destination>>();
const unredactedOf = new WeakMap<Logger, Logger>();

/**
 * The same format, level and stream without the redaction paths, for lines whose every field the code chooses (the
 * gateway's access line): redaction inspects every line it is given, ~15 µs a line in a micro-bench. Lines that
 * carry an error, a caller's input or a header go through the logger itself.
 */
export function fixedFieldLogger(logger: Logger): Logger {
  const unredacted = unredactedOf.get(logger);
  if (!unredacted) throw new Error('fixedFieldLogger takes a logger made by createLogger');
  return unredacted;
}

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
    // Writes the buffer behind every write before it; the callback follows once all of them are written (its error
    // is fsync's, which a pipe refuses).
    stdout.flush(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
