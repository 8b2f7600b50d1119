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
  return options.destination ? pino(pinoOptions, options.destination) : pino(pinoOptions);
}
