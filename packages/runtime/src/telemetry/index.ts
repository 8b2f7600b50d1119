export { isAcceptableRequestId } from './context';
export { createLogger, fixedFieldLogger, isWarningOrWorse, type Logger, logWritten } from './logger';
export { Metrics, sharedWhileReading } from './metrics';
export {
  endSpan,
  extractContext,
  extractEdgeContext,
  type Span,
  SpanKind,
  startSpan,
  startTracing,
  type TraceContext,
  traceLogFields,
  type Tracing,
  tracingEnabled,
  tracingRequested,
} from './tracing';
