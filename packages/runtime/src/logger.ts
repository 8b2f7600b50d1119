import { trace } from '@opentelemetry/api';
import pino, { type Logger, type LoggerOptions } from 'pino';
import { currentContext } from './context';

export type { Logger } from 'pino';

/**
 * The one JSON log format of every process: pino's line format with `service`, and on every line
 * logged inside a request the `request_id`, `trace_id` and `span_id`.
 */
export function createLogger(options: { service: string; level?: string; destination?: pino.DestinationStream }): Logger {
  const pinoOptions: LoggerOptions = {
    level: options.level ?? 'info',
    base: { service: options.service },
    timestamp: pino.stdTimeFunctions.isoTime,
    messageKey: 'msg',
    formatters: { level: (label) => ({ level: label }) },
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'password', 'token', 'secret', '*.password', '*.client_secret'],
      censor: '[redacted]',
    },
    mixin() {
      const fields: Record<string, string> = {};
      const ctx = currentContext();
      if (ctx) fields.request_id = ctx.requestId;
      const spanContext = trace.getActiveSpan()?.spanContext();
      if (spanContext && spanContext.traceId !== '00000000000000000000000000000000') {
        fields.trace_id = spanContext.traceId;
        fields.span_id = spanContext.spanId;
      }
      return fields;
    },
  };
  return options.destination ? pino(pinoOptions, options.destination) : pino(pinoOptions);
}
